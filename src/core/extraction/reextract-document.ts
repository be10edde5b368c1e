import type { TenantScope } from "../../db/scope";
import { notFound } from "../../errors";
import type { Services } from "../../ports";
import { documentExtractionJob } from "../documents/document-extraction";
import { EXTRACTION_GRACE_MS } from "../memory/conversation-jobs";
import { recordEvents } from "./events";

/**
 * Reads a document's chunks again (memory_reextract with document_id), as reextract.ts does a conversation's: a new
 * extraction epoch (new windows), the cursor back to its first chunk at or after `since`, its failed windows in that
 * range no longer waiting for retries, a `reextract` event, and the job. The document extracts from then on, as if
 * ingested with extract: true. NOT_FOUND for a document that is not in the project, or not ready.
 */
export async function reextractDocument(
  scope: TenantScope,
  services: Services,
  request: { project: string; documentId: string; since?: number },
): Promise<{ chunks: number }> {
  const since = request.since ?? 0;
  const found = await scope.d1
    .prepare(
      `SELECT
         (SELECT MIN(i.position) FROM items i WHERE i.tenant_id = d.tenant_id AND i.document_id = d.id AND i.created_at >= ?4) AS first,
         (SELECT COUNT(*) FROM items i WHERE i.tenant_id = d.tenant_id AND i.document_id = d.id AND i.created_at >= ?4) AS chunks
       FROM documents d WHERE d.tenant_id = ?1 AND d.id = ?2 AND d.project = ?3 AND d.status = 'ready'`,
    )
    .bind(scope.tenantId, request.documentId, request.project, since)
    .first<{ first: number | null; chunks: number }>();
  if (!found)
    throw notFound(`No ready document '${request.documentId}' in project '${request.project}'`, {
      parameter: "document_id",
    });
  if (found.first === null) return { chunks: 0 };
  const now = Date.now();
  const source = { project: request.project, conversationId: request.documentId, document: true };
  await scope.d1.batch([
    scope.d1
      .prepare(
        `UPDATE documents SET extract = 1, extraction_epoch = extraction_epoch + 1, extracted_count = ?3,
           extract_due_at = ?4
         WHERE tenant_id = ?1 AND id = ?2`,
      )
      .bind(scope.tenantId, request.documentId, found.first, now + EXTRACTION_GRACE_MS),
    scope.d1
      .prepare(
        `UPDATE extraction_windows SET retry_at = NULL
         WHERE tenant_id = ?1 AND document_id = ?2 AND status = 'failed' AND retry_at IS NOT NULL AND last_position >= ?3`,
      )
      .bind(scope.tenantId, request.documentId, found.first),
    ...recordEvents(scope, source, null, now, [
      {
        event: "reextract",
        memoryId: null,
        key: null,
        sources: [],
        error: null,
        reason: `read again from chunk ${found.first} with ${services.model?.name ?? "no model"}${
          request.since === undefined ? "" : ` (chunks stored since ${new Date(since).toISOString()})`
        }`,
      },
    ]),
  ]);
  try {
    await services.jobs.send([documentExtractionJob(scope.tenantId, request.documentId)]);
  } catch (error) {
    console.error("could not queue a document's re-extraction; the minute pass sends it", error);
  }
  return { chunks: found.chunks };
}
