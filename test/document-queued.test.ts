import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import type { JobMessage } from "../src/messages";
import { callTool, cron, type Deployment, deliver, deployment, take } from "./dispatch-helpers";
import { makePdf } from "./fixtures/make-pdf";
import { newTenant, type TestTenant, tenantDb } from "./helpers";

// Large documents convert in a queued job (docs/documents.md "Large documents"): the call answers `converting`, the job
// makes the whole version searchable in one batch or fails it with the reason, and a lost job is sent again.

const SWEEP = "*/15 * * * *";
const runbook = (extra = "") =>
  makePdf(
    [
      [{ text: "Runbook", size: 20 }, { text: `Restart the ingest worker when its queue backs up.${extra}` }],
      [{ text: "Escalation", size: 15 }, { text: "Page the storage on-call after two failed restarts." }],
    ],
    { title: "Ingest runbook" },
  );
const base64 = (bytes: Uint8Array) => btoa(String.fromCharCode(...bytes));
/** Every document over 200 bytes converts in a job; the deployment's job messages are kept, not run. */
const queued = () => deployment({ DOCUMENT_QUEUE_BYTES: "200" });
const converts = (d: Deployment, t: TestTenant) =>
  take(d, t).filter((m): m is Extract<JobMessage, { type: "convert" }> => m.type === "convert");

/** Search results through the deployment. */
const found = async (d: Deployment, t: TestTenant, query: string) =>
  (await callTool(d, t, "search", { query })).results as Record<string, any>[];

async function chunkCount(t: TestTenant, documentId: string): Promise<number> {
  const db = await tenantDb(t.tenantId);
  return (await db
    .prepare("SELECT COUNT(*) AS n FROM items WHERE tenant_id = ? AND document_id = ?")
    .bind(t.tenantId, documentId)
    .first<number>("n"))!;
}

async function objects(t: TestTenant, documentId: string): Promise<string[]> {
  const listed = await env.DOCUMENTS.list({ prefix: `${t.tenantId}/${documentId}/` });
  return listed.objects.map((o) => o.key.slice(`${t.tenantId}/${documentId}/`.length)).sort();
}

describe("a large document converts in a queued job", () => {
  it("answers converting at once; the job makes all of it searchable together, once however often it runs", async () => {
    const d = queued();
    const t = await newTenant();
    const pdf = runbook();
    const args = { content_base64: base64(pdf), file_name: "runbook.pdf", document_key: "runbook" };
    const answer = await callTool(d, t, "memory_ingest_document", args);
    expect(answer).toMatchObject({ status: "converting", title: "runbook.pdf", pages: null, chunks: 0 });
    const id = answer.document_id as string;
    expect(await callTool(d, t, "memory_get_document", { document_id: id })).toMatchObject({
      status: "converting",
      sections: [],
      bytes: pdf.byteLength,
    });
    const search = () => found(d, t, "failed restarts on-call");
    expect(await search()).toEqual([]);
    // The same bytes again while it converts: no second job.
    expect(await callTool(d, t, "memory_ingest_document", args)).toMatchObject({
      document_id: id,
      status: "converting",
      unchanged: true,
    });
    const jobs = converts(d, t);
    expect(jobs).toEqual([
      { type: "convert", tenantId: t.tenantId, documentId: id, sha256: expect.any(String), title: null },
    ]);

    await deliver(d, jobs);
    expect(await callTool(d, t, "memory_get_document", { document_id: id })).toMatchObject({
      status: "ready",
      title: "Ingest runbook",
      pages: 2,
      chunks: 2,
      sections: [expect.objectContaining({ page: 1 }), expect.objectContaining({ page: 2 })],
    });
    const hit = (await search())[0]!;
    expect(hit.document).toMatchObject({ document_id: id, page: 2 });
    // A redelivered job finds nothing converting.
    await deliver(d, jobs);
    expect(await chunkCount(t, id)).toBe(2);
    expect(await objects(t, id)).toHaveLength(2);
  });

  it("a file the converter refuses fails with the reason and leaves nothing searchable", async () => {
    const d = queued();
    const t = await newTenant();
    const locked = makePdf([[{ text: "secret plans ".repeat(20) }]], { encrypted: true });
    const answer = await callTool(d, t, "memory_ingest_document", { content_base64: base64(locked) });
    expect(answer.status).toBe("converting");
    await deliver(d, converts(d, t));
    const got = await callTool(d, t, "memory_get_document", { document_id: answer.document_id });
    expect(got).toMatchObject({
      status: "failed",
      error: expect.stringMatching(/encrypted with a password/),
      chunks: 0,
    });
    expect(await chunkCount(t, answer.document_id as string)).toBe(0);
    // Sending it again tries again.
    await callTool(d, t, "memory_ingest_document", { content_base64: base64(locked) });
    expect(converts(d, t)).toHaveLength(1);

    // Under a key: a stored version, a large one that fails, then a small one: only the last one's objects are left.
    const key = { document_key: "plans" };
    const v1 = await callTool(d, t, "memory_ingest_document", { content: "# Plans\n\nThe first plan.", ...key });
    await callTool(d, t, "memory_ingest_document", { content_base64: base64(locked), ...key });
    await deliver(d, converts(d, t));
    const v3 = await callTool(d, t, "memory_ingest_document", { content: "# Plans\n\nThe third plan.", ...key });
    expect(v3).toMatchObject({ document_id: v1.document_id, status: "ready", replaced: true });
    const { sha256 } = await callTool(d, t, "memory_get_document", { document_id: v1.document_id });
    expect(await objects(t, v1.document_id as string)).toEqual([sha256, `${sha256}.md`]);
    expect((await found(d, t, "first plan")).map((r) => r.content)).toEqual([]);
  });

  it("a job lost with the queue down is sent again by the sweep; a conversion that never ends fails after an hour", async () => {
    const d = queued();
    const t = await newTenant();
    d.queue = "down";
    const answer = await callTool(d, t, "memory_ingest_document", { content_base64: base64(runbook()) });
    expect(answer.status).toBe("converting");
    d.queue = "up";
    expect(converts(d, t)).toEqual([]);
    await cron(d, SWEEP, Date.now() + 5 * 60_000);
    expect(converts(d, t)).toEqual([]);
    await cron(d, SWEEP, Date.now() + 11 * 60_000);
    expect(converts(d, t).map((m) => m.documentId)).toEqual([answer.document_id]);
    await cron(d, SWEEP, Date.now() + 61 * 60_000);
    expect(await callTool(d, t, "memory_get_document", { document_id: answer.document_id })).toMatchObject({
      status: "failed",
      error: "the conversion did not finish within an hour: ingest it again",
    });
  });

  it("deleted or replaced while it converts, a job writes nothing back; a replaced version stays searchable until then", async () => {
    const d = queued();
    const t = await newTenant();
    const gone = await callTool(d, t, "memory_ingest_document", { content_base64: base64(runbook()) });
    const lostJobs = converts(d, t);
    await callTool(d, t, "memory_delete_document", { document_id: gone.document_id });
    await deliver(d, lostJobs);
    expect(await chunkCount(t, gone.document_id as string)).toBe(0);
    expect(await objects(t, gone.document_id as string)).toEqual([]);

    // A small first version is stored at once; a large second one converts while the first stays searchable.
    const key = { document_key: "guide", project_id: "ops" };
    const first = await callTool(d, t, "memory_ingest_document", { content: "# Guide\n\nUse the blue lever.", ...key });
    expect(first.status).toBe("ready");
    const second = await callTool(d, t, "memory_ingest_document", { content_base64: base64(runbook()), ...key });
    const third = await callTool(d, t, "memory_ingest_document", {
      content_base64: base64(runbook(" Then check the dashboard.")),
      ...key,
    });
    expect([second.status, third.status, second.replaced]).toEqual(["converting", "converting", true]);
    const [secondJob, thirdJob] = converts(d, t);
    expect((await found(d, t, "blue lever"))[0]!.document.document_id).toBe(first.document_id);
    await deliver(d, [secondJob!]);
    expect(await chunkCount(t, first.document_id as string)).toBe(1);
    await deliver(d, [thirdJob!]);
    expect((await found(d, t, "check the dashboard"))[0]!.content).toContain("Then check the dashboard.");
    expect(await found(d, t, "blue lever")).toEqual([]);
    expect(await objects(t, first.document_id as string)).toEqual([thirdJob!.sha256, `${thirdJob!.sha256}.md`]);
  });
});
