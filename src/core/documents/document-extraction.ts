import type { TenantScope } from "../../db/scope";
import type { JobMessage } from "../../messages";
import type { Services } from "../../ports";
import { EXTRACTION_GRACE_MS } from "../memory/conversation-jobs";

// Memories from a document (memory_ingest_document with extract: true; docs/documents.md "Memories from a
// document"): its chunks are read in order, in windows, by the extraction of conversations (src/core/extraction/),
// with the document's prompt; the cursor is documents.extracted_count.

/** The job that reads a document's chunks not read yet. */
export function documentExtractionJob(tenantId: string, documentId: string): JobMessage {
  return { type: "extract", tenantId, conversationId: documentId, flush: true, document: true };
}

/**
 * Queues the document's extraction. Its row already says it is due (writeDocumentRow), so a send that fails is
 * logged and not thrown: the document is stored, and the minute pass sends the job.
 */
export async function queueDocumentExtraction(
  scope: TenantScope,
  services: Services,
  documentId: string,
): Promise<void> {
  try {
    await services.jobs.send([documentExtractionJob(scope.tenantId, documentId)]);
  } catch (error) {
    console.error(`extraction of document ${documentId} not queued; the minute pass sends it`, error);
  }
}

/**
 * The same version ingested again with extract: true, where it did not extract: it extracts from now (a version still
 * converting, once it is ready). True when that changed anything; the caller then queues the job for a ready one.
 */
export async function startExtracting(scope: TenantScope, documentId: string): Promise<boolean> {
  const changed = await scope.d1
    .prepare(
      `UPDATE documents SET extract = 1, extracted_count = 0,
         extract_due_at = CASE WHEN status = 'ready' THEN ?3 END
       WHERE tenant_id = ?1 AND id = ?2 AND extract = 0 RETURNING status`,
    )
    .bind(scope.tenantId, documentId, Date.now() + EXTRACTION_GRACE_MS)
    .first<{ status: string }>();
  return changed?.status === "ready";
}
