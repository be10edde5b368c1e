import type { TenantScope } from "../../db/scope";
import { DocumentRejected } from "../../errors";
import type { JobMessage } from "../../messages";
import type { Services } from "../../ports";
import { COLUMNS, type DocumentRow, writeDocumentRow } from "./document-rows";
import { originalKey } from "./originals";
import { convertAndStore, type DocumentToConvert, NoText, putOriginal, versionRow } from "./store-converted";

// Large documents convert in a queued job (docs/documents.md "Large documents"): the call stores the original and a
// row that says `converting`, and answers at once; the job converts, and its one D1 batch writes the chunks with the
// row `ready`, or the row says `failed` with the reason. Nothing of a version is searchable until all of it is.

type ConvertJob = Extract<JobMessage, { type: "convert" }>;

/** How long a conversion may take, its re-sent jobs included, before the sweep marks it failed. */
export const CONVERSION_GIVES_UP_AFTER_MS = 60 * 60_000;

/**
 * The original to R2 and the row as `converting` (a replacement's earlier chunks stay searchable until the new ones
 * are in), then the job. A send that fails does not fail the call: the sweep sends the job of a conversion that has
 * not moved for 10 minutes.
 */
export async function queueConversion(
  scope: TenantScope,
  services: Services,
  doc: Omit<DocumentToConvert, "originalStored" | "whileConverting" | "replacing">,
): Promise<{ title: string }> {
  await putOriginal(scope, services, doc);
  const title = (doc.title ?? doc.fileName ?? doc.url ?? "Untitled document").slice(0, 500);
  const row = versionRow(doc, title, { pages: null, status: "converting", summaries: [], chunks: 0, tokens: 0 });
  await writeDocumentRow(scope, row, Date.now()).run();
  const job: ConvertJob = {
    type: "convert",
    tenantId: scope.tenantId,
    documentId: doc.documentId,
    sha256: doc.sha256,
    title: doc.title,
  };
  try {
    await services.jobs.send([job]);
  } catch (error) {
    console.error(`convert job of document ${doc.documentId} not sent; the sweep sends it`, error);
  }
  return { title };
}

/**
 * The job: converts the version its row is converting, if it still is (deleted, replaced or done meanwhile: nothing to
 * do). A file the converter refuses (broken, encrypted, over the page limit) or with no text leaves the row `failed`
 * with the reason; any other error is thrown, for the queue to retry.
 */
export async function runConversion(scope: TenantScope, services: Services, job: ConvertJob): Promise<void> {
  const row = await converting(scope, job);
  if (!row) return;
  const original = await services.originals.get(originalKey(scope.tenantId, job.documentId, job.sha256));
  if (!original) return fail(scope, job, "its original is missing from R2: ingest it again");
  const doc: DocumentToConvert = {
    documentId: row.id,
    project: row.project,
    bytes: new Uint8Array(await original.arrayBuffer()),
    sha256: row.sha256,
    mimeType: row.mime_type,
    fileName: row.file_name,
    url: row.url,
    documentKey: row.document_key,
    title: job.title,
    tags: JSON.parse(row.tags) as string[],
    metadata: JSON.parse(row.metadata) as Record<string, unknown>,
    extract: row.extract === 1,
    replacing: null,
    originalStored: true,
    whileConverting: true,
  };
  try {
    await convertAndStore(scope, services, doc);
  } catch (error) {
    if (error instanceof DocumentRejected || error instanceof NoText) return fail(scope, job, error.message);
    // Its commit refused: the row stopped converting this version meanwhile, and nothing was written.
    if (!(await converting(scope, job))) return;
    throw error;
  }
}

async function converting(scope: TenantScope, job: ConvertJob): Promise<DocumentRow | null> {
  return scope.d1
    .prepare(`SELECT ${COLUMNS} FROM documents WHERE tenant_id = ? AND id = ? AND sha256 = ? AND status = 'converting'`)
    .bind(scope.tenantId, job.documentId, job.sha256)
    .first<DocumentRow>();
}

/** The row failed with the reason, while it still converts this version. */
async function fail(scope: TenantScope, job: ConvertJob, reason: string): Promise<void> {
  await scope.d1
    .prepare(
      `UPDATE documents SET status = 'failed', error = ?, updated_at = ?
       WHERE tenant_id = ? AND id = ? AND sha256 = ? AND status = 'converting'`,
    )
    .bind(reason.slice(0, 1_000), Date.now(), scope.tenantId, job.documentId, job.sha256)
    .run();
}

/**
 * The sweep's share, on one shard: conversions whose row has not moved for `lostAfterMs` get their job again (the
 * job's conditions make a second one harmless); one converting past CONVERSION_GIVES_UP_AFTER_MS is failed. Walks
 * the partial index of converting documents: nothing converting, a row read a statement at most.
 */
export async function lostConversions(d1: D1Database, now: number, lostAfterMs: number): Promise<ConvertJob[]> {
  const [failed, lost] = await d1.batch<{ tenant_id: string; id: string; sha256: string; title: string }>([
    d1
      .prepare(
        `UPDATE documents SET status = 'failed', updated_at = ?1,
           error = 'the conversion did not finish within an hour: ingest it again'
         WHERE status = 'converting' AND updated_at < ?2 RETURNING tenant_id, id`,
      )
      .bind(now, now - CONVERSION_GIVES_UP_AFTER_MS),
    d1
      .prepare(
        "SELECT tenant_id, id, sha256, title FROM documents WHERE status = 'converting' AND updated_at < ? LIMIT 100",
      )
      .bind(now - lostAfterMs),
  ]);
  if (failed!.results.length > 0) console.error(`${failed!.results.length} document conversions gave up`);
  return lost!.results.map((r) => ({
    type: "convert",
    tenantId: r.tenant_id,
    documentId: r.id,
    sha256: r.sha256,
    title: r.title,
  }));
}
