import { describe, expect, it } from "vitest";
import { makeDocx } from "./fixtures/make-docx";
import { makePdf } from "./fixtures/make-pdf";
import { call, newTenant, request, untilLogged } from "./helpers";

// POST /documents: a document as a file, for apps and people (docs/documents.md): the body is the file with its
// Content-Type, or a multipart form. It answers what memory_ingest_document answers, through the same checks.

const pdf = makePdf(
  [
    [{ text: "Runbook", size: 20 }, { text: "Restart the ingest worker when its queue backs up." }],
    [{ text: "Escalation", size: 15 }, { text: "Page the storage on-call after two failed restarts." }],
  ],
  { title: "Ingest runbook" },
);

function post(apiKey: string, body: BodyInit, headers: Record<string, string> = {}, query = ""): Promise<Response> {
  return request(`/documents${query}`, {
    method: "POST",
    headers: { authorization: `Bearer ${apiKey}`, ...headers },
    body,
  });
}

describe("POST /documents", () => {
  it("takes a raw PDF body with its Content-Type and the other parameters in the query", async () => {
    const t = await newTenant();
    const response = await post(
      t.apiKey,
      pdf,
      { "content-type": "application/pdf" },
      "?project_id=ops&document_key=runbook&file_name=runbook.pdf&tags=ops,runbook",
    );
    expect(response.status).toBe(200);
    const answer = await response.json<Record<string, unknown>>();
    expect(answer).toMatchObject({
      status: "ready",
      title: "Ingest runbook",
      mime_type: "application/pdf",
      pages: 2,
      replaced: false,
      unchanged: false,
    });
    const got = await call(t.apiKey, "memory_get_document", { document_id: answer.document_id });
    expect(got).toMatchObject({
      file_name: "runbook.pdf",
      bytes: pdf.byteLength,
      project_id: "ops",
      tags: ["ops", "runbook"],
    });
    const hits = await call(t.apiKey, "search", { query: "failed restarts on-call" });
    expect(hits.results[0].content).toContain("Page the storage on-call");
    // The same key and bytes again: no work, as the tool answers.
    const again = await post(
      t.apiKey,
      pdf,
      { "content-type": "application/pdf" },
      "?project_id=ops&document_key=runbook",
    );
    expect(await again.json()).toMatchObject({ document_id: answer.document_id, unchanged: true });
    // Logged as the tool's calls.
    await untilLogged(t.tenantId, 2, "memory_ingest_document");
  });

  it("takes a multipart form: the file part's type and name, and the fields", async () => {
    const t = await newTenant();
    const docx = makeDocx([
      { heading: 1, text: "Onboarding" },
      { text: "New engineers pair with a buddy for two weeks." },
    ]);
    const form = new FormData();
    form.append(
      "file",
      new File([docx], "onboarding.docx", {
        type: "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
      }),
    );
    form.append("title", "Onboarding guide");
    form.append("metadata", JSON.stringify({ team: "platform" }));
    // The query's parameters count for a form too (curl -F file=@... ".../documents?project_id=..."); a field wins.
    const response = await post(t.apiKey, form, {}, "?project_id=people&title=Ignored");
    expect(response.status).toBe(200);
    const answer = await response.json<{ document_id: string; title: string; sections: number }>();
    expect(answer).toMatchObject({ title: "Onboarding guide", sections: 1 });
    const got = await call(t.apiKey, "memory_get_document", { document_id: answer.document_id });
    expect(got).toMatchObject({ file_name: "onboarding.docx", metadata: { team: "platform" }, project_id: "people" });
  });

  it("infers an untyped body's type from its bytes", async () => {
    const t = await newTenant();
    const response = await post(t.apiKey, pdf, { "content-type": "application/octet-stream" });
    expect(await response.json()).toMatchObject({ mime_type: "application/pdf", pages: 2 });
  });

  it("refuses what the tool refuses, with its error and status, and stores nothing", async () => {
    const t = await newTenant({ projects: ["docs"] });
    const refused = async (response: Response, status: number, parameter: string | null, message: RegExp) => {
      expect(response.status).toBe(status);
      const { error } = await response.json<{
        error: { code: string; message: string; details: { parameter?: string } };
      }>();
      if (parameter) expect(error.details.parameter).toBe(parameter);
      expect(error.message).toMatch(message);
    };
    const typed = { "content-type": "application/pdf" };
    await refused(await post(t.apiKey, new Uint8Array(), typed, "?project_id=docs"), 400, "file", /empty/);
    await refused(
      await post(t.apiKey, pdf, typed, "?project_id=docs&url=https://example.com/a.pdf"),
      400,
      "file",
      /exactly one/,
    );
    await refused(await post(t.apiKey, pdf, typed, "?project_id=docs&metadata=%7Bbroken"), 400, "metadata", /JSON/);
    await refused(await post(t.apiKey, pdf, typed, "?project_id=docs&extract=maybe"), 400, "extract", /true or false/);
    await refused(
      await post(t.apiKey, new TextEncoder().encode("%PDF-1.4 not a pdf"), typed, "?project_id=docs"),
      400,
      "file",
      /could not be read/,
    );
    // A key limited to project docs may not write to another.
    await refused(await post(t.apiKey, pdf, typed, "?project_id=other"), 403, null, /may not touch project 'other'/);
    const form = new FormData();
    form.append("file", "a text field, not a file");
    form.append("project_id", "docs");
    await refused(await post(t.apiKey, form), 400, "file", /file part/);
    const list = await call(t.apiKey, "memory_list", { project: "docs" });
    expect([list.total, list.memories]).toEqual([0, []]);
    // No key: refused before the body is read.
    expect((await request("/documents", { method: "POST", body: pdf })).status).toBe(401);
  });

  it("refuses a body over DOCUMENT_MAX_BYTES and a form's room, naming the limit", async () => {
    const t = await newTenant();
    const big = new Uint8Array(25 * 1024 * 1024 + 1_048_576 + 1);
    const response = await post(t.apiKey, big, { "content-type": "application/pdf" });
    expect(response.status).toBe(400);
    const { error } = await response.json<{ error: { message: string; details: { limit: number } } }>();
    expect(error.message).toMatch(/DOCUMENT_MAX_BYTES/);
    expect(error.details.limit).toBe(25 * 1024 * 1024 + 1_048_576);
  });
});
