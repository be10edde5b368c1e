import type { TenantScope } from "../../db/scope";
import { base64OfBytes } from "../../shared/base64";
import { markdownKey, originalKey } from "../documents/originals";
import { type ExportLine, exportedProjects, PAGE, paged } from "./export-pages";

/** Where an export reads documents' Markdown and originals, and whether it carries the originals. */
export interface DocumentExport {
  originals: R2Bucket;
  /** The originals' bytes too (`?originals=true`): a file of documents' size, beside their Markdown. */
  withOriginals: boolean;
}

/**
 * Each document of the export's projects: its metadata, its sections, its Markdown (what its chunks were cut from)
 * and, when asked for, its original as base64. Its chunks follow as item records naming it. A document whose
 * Markdown is missing from R2 still travels, with `markdown: null`.
 */
export async function* documentLines(
  scope: TenantScope,
  project: string | null,
  from: DocumentExport,
): AsyncGenerator<ExportLine> {
  const where = exportedProjects(scope, project, "project");
  const rows = paged("document", (after) =>
    scope.d1
      .prepare(
        `SELECT id, project, document_key, title, file_name, url, mime_type, bytes, sha256, pages, status, error, sections,
           chunks, tokens, tags, metadata, extract, extracted_count, extraction_epoch, created_at, updated_at FROM documents
         WHERE tenant_id = ? AND id > ?${where.sql} ORDER BY id LIMIT ${PAGE}`,
      )
      .bind(scope.tenantId, after?.[0] ?? "", ...where.params),
  );
  for await (const row of rows) {
    const id = row.id as string;
    const sha256 = row.sha256 as string;
    const markdown = await from.originals.get(markdownKey(scope.tenantId, id, sha256));
    const original = from.withOriginals ? await from.originals.get(originalKey(scope.tenantId, id, sha256)) : null;
    yield {
      ...row,
      sections: JSON.parse(row.sections as string),
      tags: JSON.parse(row.tags as string),
      metadata: JSON.parse(row.metadata as string),
      extract: row.extract === 1,
      markdown: markdown ? await markdown.text() : null,
      ...(original ? { original_base64: base64OfBytes(new Uint8Array(await original.arrayBuffer())) } : {}),
    };
  }
}
