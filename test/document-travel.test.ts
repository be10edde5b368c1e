import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { makePdf } from "./fixtures/make-pdf";
import { call, newTenant, normalisedExport, request, tenantDb } from "./helpers";

// Documents in an export and an import (docs/documents.md, docs/operations.md): the document with its Markdown and
// sections, its chunks with their page and section, and its original when the export asks for it. A copy cites, finds
// and deletes its documents as the original tenant did.

const pdf = makePdf(
  [
    [{ text: "Runbook", size: 20 }, { text: "Restart the ingest worker when its queue backs up." }],
    [{ text: "Escalation", size: 15 }, { text: "Page the storage on-call after two failed restarts." }],
  ],
  { title: "Ingest runbook" },
);
const base64 = (bytes: Uint8Array) => btoa(String.fromCharCode(...bytes));
const GUIDE = "# Guide\n\n## Install\n\nRun the installer as root.\n\n## Upgrade\n\nStop the service, then upgrade.";

const exportOf = (tenantId: string, query = "") =>
  request(`/admin/tenants/${tenantId}/export${query}`, { headers: { authorization: "Bearer test-admin-token" } });
const importInto = (tenantId: string, body: string) =>
  request(`/admin/tenants/${tenantId}/import`, {
    method: "POST",
    headers: { authorization: "Bearer test-admin-token", "content-type": "application/x-ndjson" },
    body,
  });
const linesOf = (ndjson: string) =>
  ndjson
    .trimEnd()
    .split("\n")
    .map((line) => JSON.parse(line) as Record<string, any>);
async function tenantWithDocuments() {
  const a = await newTenant();
  const runbook = await call(a.apiKey, "memory_ingest_document", {
    content_base64: base64(pdf),
    file_name: "runbook.pdf",
    project_id: "ops",
    document_key: "runbook",
    tags: ["ops"],
  });
  await call(a.apiKey, "memory_ingest_document", { content: GUIDE, project_id: "ops", title: "Guide" });
  return { a, runbook };
}

async function count(tenantId: string, table: string): Promise<number> {
  const db = await tenantDb(tenantId);
  return (await db
    .prepare(`SELECT COUNT(*) AS n FROM ${table} WHERE tenant_id = ?`)
    .bind(tenantId)
    .first<{ n: number }>())!.n;
}

describe("documents in an export and an import", () => {
  it("carry their Markdown, sections and chunks' places: the copy cites, finds, re-sends and deletes them alike", async () => {
    const { a, runbook } = await tenantWithDocuments();
    const exported = await (await exportOf(a.tenantId)).text();
    const lines = linesOf(exported);
    expect(lines[0]).toMatchObject({ type: "header", version: 3 });
    const documents = lines.filter((l) => l.type === "document");
    expect(documents.map((d) => d.title).sort()).toEqual(["Guide", "Ingest runbook"]);
    expect(documents.find((d) => d.title === "Ingest runbook")).toMatchObject({
      document_key: "runbook",
      file_name: "runbook.pdf",
      pages: 2,
      status: "ready",
      markdown: expect.stringContaining("Page the storage on-call after two failed restarts."),
    });
    expect(documents.every((d) => d.original_base64 === undefined)).toBe(true);
    expect(lines.find((l) => l.type === "item" && l.content.includes("two failed restarts"))).toMatchObject({
      kind: "document",
      document_id: runbook.document_id,
      document_page: 2,
      document_section: expect.stringContaining("Escalation"),
    });

    const b = await newTenant();
    const summary = await (await importInto(b.tenantId, exported)).json<any>();
    expect(summary.imported).toMatchObject({ documents: 2, items: lines.filter((l) => l.type === "item").length });
    const hits = await call(b.apiKey, "search", { query: "failed restarts on-call" });
    expect(hits.results[0].content).toContain("Page the storage on-call");
    expect(hits.results[0].document).toMatchObject({
      title: "Ingest runbook",
      file_name: "runbook.pdf",
      mime_type: "application/pdf",
      page: 2,
    });
    const copyId = hits.results[0].document.document_id as string;
    const original = await call(a.apiKey, "memory_get_document", { document_id: runbook.document_id });
    const copy = await call(b.apiKey, "memory_get_document", { document_id: copyId, include_markdown: true });
    const { document_id: _, markdown, ...same } = copy;
    expect(same).toEqual(withoutId(original));
    expect(markdown).toContain("## Escalation");

    // Exporting the copy gives the original's lines; importing the file again adds nothing.
    expect(normalisedExport(await (await exportOf(b.tenantId)).text(), b.tenantId)).toEqual(
      normalisedExport(exported, a.tenantId),
    );
    const twice = await (await importInto(b.tenantId, exported)).json<any>();
    expect(twice.imported).toMatchObject({ documents: 0, items: 0 });
    expect(twice.skipped).toMatchObject({ documents: 2 });

    // The key and version travelled: the same bytes again do nothing, and deleting the copy takes all of it.
    const again = await call(b.apiKey, "memory_ingest_document", {
      content_base64: base64(pdf),
      project_id: "ops",
      document_key: "runbook",
    });
    expect(again).toMatchObject({ document_id: copyId, unchanged: true });
    await call(b.apiKey, "memory_delete_document", { document_id: copyId });
    expect((await env.DOCUMENTS.list({ prefix: `${b.tenantId}/${copyId}/` })).objects).toEqual([]);
    const db = await tenantDb(b.tenantId);
    const left = await db
      .prepare("SELECT COUNT(*) AS n FROM items WHERE tenant_id = ? AND document_id = ?")
      .bind(b.tenantId, copyId)
      .first<{ n: number }>();
    expect(left!.n).toBe(0);
  });

  it("carries the originals on request, each checked against its SHA-256 on import", async () => {
    const { a, runbook } = await tenantWithDocuments();
    const refused = await exportOf(a.tenantId, "?originals=yes");
    expect(refused.status).toBe(400);
    expect(await refused.text()).toMatch(/originals must be true or false/);
    const exported = await (await exportOf(a.tenantId, "?originals=true")).text();
    const line = linesOf(exported).find((l) => l.type === "document" && l.title === "Ingest runbook")!;
    expect(line.original_base64).toBe(base64(pdf));

    const tampered = exported.replace(line.original_base64, base64(pdf.map((byte, i) => (i === 20 ? byte ^ 1 : byte))));
    const c = await newTenant();
    const bad = await importInto(c.tenantId, tampered);
    expect(bad.status).toBe(400);
    expect(await bad.text()).toMatch(/the original's SHA-256 is not the document's sha256/);
    expect([await count(c.tenantId, "documents"), await count(c.tenantId, "items")]).toEqual([0, 0]);

    expect((await importInto(c.tenantId, exported)).status).toBe(200);
    const copy = await (await tenantDb(c.tenantId))
      .prepare("SELECT id FROM documents WHERE tenant_id = ? AND document_key = 'runbook'")
      .bind(c.tenantId)
      .first<{ id: string }>();
    expect(copy!.id).toMatch(new RegExp(`^${runbook.document_id}~[0-9a-f]{8}$`));
    const stored = await env.DOCUMENTS.get(`${c.tenantId}/${copy!.id}/${line.sha256}`);
    expect(new Uint8Array(await stored!.arrayBuffer())).toEqual(pdf);
  });

  it("refuses a chunk whose document the file lacks, and a key that names another document of the project here", async () => {
    const { a } = await tenantWithDocuments();
    const exported = await (await exportOf(a.tenantId)).text();
    const withoutGuide = exported
      .split("\n")
      .filter((line) => !line.includes('"type":"document","id"') || !line.includes('"title":"Guide"'))
      .join("\n");
    const c = await newTenant();
    const orphan = await importInto(c.tenantId, withoutGuide);
    expect(orphan.status).toBe(400);
    expect(await orphan.text()).toMatch(/document_id '[^']+' names no document record of the file/);

    // Two documents of the file under one key in one project: which one would the key name?
    const [header, ...rest] = exported.split("\n");
    const twin = rest
      .find((line) => line.includes('"title":"Guide"'))!
      .replace('"document_key":null', '"document_key":"runbook"');
    const twice = await importInto(
      c.tenantId,
      [header, twin, ...rest.filter((l) => !l.includes('"title":"Guide"'))].join("\n"),
    );
    expect(twice.status).toBe(400);
    expect(await twice.text()).toMatch(/document_key 'runbook' is given to another document of project 'ops' too/);

    // Another runbook under the same key in the same project here: the file's would replace it unasked.
    await call(c.apiKey, "memory_ingest_document", {
      content: "# Other\n\nAnother runbook.",
      project_id: "ops",
      document_key: "runbook",
    });
    const conflict = await importInto(c.tenantId, exported);
    expect(conflict.status).toBe(409);
    expect(await conflict.text()).toMatch(/Document key 'runbook' names another document/);
    expect(await count(c.tenantId, "documents")).toBe(1);
  });
});

function withoutId(document: Record<string, unknown>) {
  const { document_id: _, ...rest } = document;
  return rest;
}
