import { z } from "zod";
import { type DocumentRef, documentRefs } from "../core/documents/document-refs";
import type { TenantScope } from "../db/scope";

/**
 * What a chunk of an ingested document carries in search hits, memory_get, memory_list and memory_context_build
 * (absent on everything else): which document, page and section it came from.
 */
export const documentField = {
  document: z
    .object({
      document_id: z.string(),
      title: z.string(),
      file_name: z.string().nullable(),
      url: z.string().nullable(),
      mime_type: z.string(),
      page: z.number().int().nullable().describe("The page the chunk's text starts on (PDF), 1-based."),
      section: z.string().describe('The heading path, "Guide > Install > Linux".'),
    })
    .optional()
    .describe("Present on a chunk of a document (memory_ingest_document): where in which document it stands."),
};

/** The document places of rows of kind document: no lookup (no round trip) when there are none. */
export function documentPlaces(
  scope: TenantScope,
  rows: readonly { id: string; kind?: string }[],
): Promise<Map<string, DocumentRef>> {
  return documentRefs(
    scope,
    rows.filter((r) => r.kind === "document").map((r) => r.id),
  );
}

export function documentFieldOf(ref: DocumentRef | undefined) {
  if (!ref) return {};
  return {
    document: {
      document_id: ref.documentId,
      title: ref.title,
      file_name: ref.fileName,
      url: ref.url,
      mime_type: ref.mimeType,
      page: ref.page,
      section: ref.section,
    },
  };
}
