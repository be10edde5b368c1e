import { describe, expect, it } from "vitest";
import { call, callTool, newKey, newTenant } from "./helpers";

// memory_list_documents through /jsonrpc: a project's documents newest first, paged by cursor, within the caller's
// tenant and projects.

const doc = (title: string) => `# ${title}\n\nAbout ${title}.\n\n## Details\n\nMore on ${title}.`;

describe("memory_list_documents", () => {
  it("lists a project's documents newest first with their counts and status, each once across pages", async () => {
    const t = await newTenant();
    const ids: string[] = [];
    for (const title of ["Alpha", "Bravo", "Charlie", "Delta", "Echo"])
      ids.push(
        (await call(t.apiKey, "memory_ingest_document", { content: doc(title), file_name: `${title}.md` })).document_id,
      );
    await call(t.apiKey, "memory_ingest_document", { content: doc("Elsewhere"), project_id: "other" });
    // Three documents stored in the same millisecond: the id orders them, and no page boundary loses or repeats one.
    await t.db
      .prepare("UPDATE documents SET created_at = 1000 WHERE tenant_id = ? AND id IN (?, ?, ?)")
      .bind(t.tenantId, ids[1], ids[2], ids[3])
      .run();

    const first = await call(t.apiKey, "memory_list_documents", { limit: 2 });
    expect(first.documents).toHaveLength(2);
    expect(first.documents[0]).toEqual({
      document_id: ids[4],
      document_key: null,
      title: "Echo",
      file_name: "Echo.md",
      url: null,
      mime_type: "text/markdown",
      bytes: new TextEncoder().encode(doc("Echo")).byteLength,
      pages: null,
      sections: 2,
      chunks: 2,
      tokens: expect.any(Number),
      status: "ready",
      error: null,
      created_at: expect.stringMatching(/^\d{4}-\d\d-\d\dT/),
      updated_at: expect.stringMatching(/^\d{4}-\d\d-\d\dT/),
    });
    const got = await call(t.apiKey, "memory_get_document", { document_id: ids[4] });
    expect(first.documents[0].sections).toBe(got.sections.length);
    expect(first.documents[0].tokens).toBe(got.tokens);
    expect(first.next_cursor).toEqual(expect.any(String));

    const seen = first.documents.map((d: { document_id: string }) => d.document_id);
    let cursor = first.next_cursor;
    while (cursor) {
      const page = await call(t.apiKey, "memory_list_documents", { limit: 2, cursor });
      seen.push(...page.documents.map((d: { document_id: string }) => d.document_id));
      cursor = page.next_cursor;
    }
    const tied = [ids[1], ids[2], ids[3]].sort().reverse();
    expect(seen).toEqual([ids[4], ids[0], ...tied]);
    expect((await call(t.apiKey, "memory_list_documents", { limit: 5 })).next_cursor).toBeNull();

    const other = await call(t.apiKey, "memory_list_documents", { project_id: "other" });
    expect(other.documents.map((d: { title: string }) => d.title)).toEqual(["Elsewhere"]);
    expect(other.next_cursor).toBeNull();
  });

  it("another tenant lists none of them, even with the first tenant's cursor", async () => {
    const a = await newTenant();
    const b = await newTenant();
    for (const title of ["One", "Two"]) await call(a.apiKey, "memory_ingest_document", { content: doc(title) });
    const page = await call(a.apiKey, "memory_list_documents", { limit: 1 });
    expect(page.next_cursor).not.toBeNull();
    expect(await call(b.apiKey, "memory_list_documents", {})).toEqual({ documents: [], next_cursor: null });
    expect(await call(b.apiKey, "memory_list_documents", { cursor: page.next_cursor })).toEqual({
      documents: [],
      next_cursor: null,
    });
  });

  it("a project-limited read key lists its project's documents and is refused another project", async () => {
    const t = await newTenant();
    await call(t.apiKey, "memory_ingest_document", { content: doc("Runbook"), project_id: "ops" });
    await call(t.apiKey, "memory_ingest_document", { content: doc("Secret plan"), project_id: "board" });
    const { apiKey: limited } = await newKey(t.tenantId, { scopes: ["read"], projects: ["ops"] });

    const ops = await call(limited, "memory_list_documents", { project_id: "ops" });
    expect(ops.documents.map((d: { title: string }) => d.title)).toEqual(["Runbook"]);
    for (const args of [{ project_id: "board" }, {}]) {
      const refused = await callTool(limited, "memory_list_documents", args);
      expect(refused.error?.data?.code).toBe("PERMISSION_DENIED");
      expect(refused.error?.message).toMatch(/may not touch project '(board|default)' \(project_id\)/);
    }
  });

  it("a bad limit or cursor is refused with an error naming the parameter", async () => {
    const t = await newTenant();
    for (const limit of [0, 101, 2.5, "ten"]) {
      const refused = await callTool(t.apiKey, "memory_list_documents", { limit });
      expect(refused.error?.data?.code, String(limit)).toBe("INVALID_PARAMETER");
      expect(refused.error?.data?.details?.parameter).toBe("limit");
      expect(refused.error?.message).toMatch(/^Invalid parameter 'limit'/);
    }
    expect((await callTool(t.apiKey, "memory_list_documents", { limit: 101 })).error?.message).toMatch(/100/);
    for (const cursor of ["not a cursor", "bm90LWEtY3Vyc29y", "!!!"]) {
      const refused = await callTool(t.apiKey, "memory_list_documents", { cursor });
      expect(refused.error?.data?.details?.parameter, cursor).toBe("cursor");
      expect(refused.error?.message).toMatch(/^Invalid parameter 'cursor'/);
    }
  });
});
