import { z } from "zod";
import { DOCUMENT_DEFAULTS } from "../config";
import { deleteDocument } from "../core/documents/delete-document";
import { type DocumentRow, readDocument, type SectionSummary } from "../core/documents/document-rows";
import { type DocumentSource, ingestDocument } from "../core/documents/ingest-document";
import { markdownKey } from "../core/documents/originals";
import { invalidParameter, notFound } from "../errors";
import { bytesOfBase64 } from "../shared/base64";
import { ANNOTATIONS, defineTool } from "./define-tool";
import { iso, metadataParam, projectName, tagsParam } from "./params";

// Documents whole (docs/documents.md): PDF, Word, web pages by URL, Markdown, HTML and CSV become sections and chunks
// that cite their page and heading, with the original kept in R2.

/** Text up to the largest document; a call's body limit (MAX_BODY_BYTES) usually binds first. */
const MAX_TEXT_CHARS = DOCUMENT_DEFAULTS.maxBytes;
const SOURCES = ["url", "content", "content_base64"] as const;

const documentIdParam = z
  .string()
  .min(1)
  .max(200)
  .describe("The document's id (memory_ingest_document's document_id).");

export const memoryIngestDocument = defineTool({
  name: "memory_ingest_document",
  category: "memory",
  title: "Ingest a document",
  description:
    "Store a whole document so it can be searched by section: a PDF (pages and outline kept), a Word file (its heading " +
    "styles), a web page by URL (main content only: navigation, footers and cookie banners dropped), Markdown, HTML, plain " +
    "text or CSV. Give exactly one of `url` (http or https, public hosts only), `content` (text) or `content_base64` (a " +
    "file's bytes). It is cut into sections by its headings and into chunks within them; every chunk cites its section " +
    '("Guide > Install > Linux") and, for a PDF, its page, in search hits, memory_get and memory_context_build. The ' +
    "original is kept. With `document_key`, ingesting the same key again replaces the document (the same bytes do no " +
    "work: unchanged is true). Answers with the counts once the document is searchable by keyword (status ready); a " +
    "large one (over DOCUMENT_QUEUE_BYTES) answers status converting at once and converts in the background: " +
    "memory_get_document shows when it is ready, or failed with the reason. With `extract`, memories (facts, events, " +
    "tasks; never instructions or preferences) are extracted from its chunks in a background job, each citing the " +
    "chunks it rests on and said_by document; memory_history with document_id shows each decision.",
  input: z.object({
    url: z.string().min(1).max(2048).optional().describe("An http(s) URL to fetch the document from."),
    content: z
      .string()
      .max(MAX_TEXT_CHARS)
      .optional()
      .describe("The document as text: Markdown, plain text, HTML or CSV."),
    content_base64: z
      .string()
      .max(Math.ceil(MAX_TEXT_CHARS / 3) * 4)
      .optional()
      .describe("The document's bytes in base64 (any supported file: PDF, DOCX, HTML, Markdown, CSV, ...)."),
    mime_type: z
      .string()
      .min(3)
      .max(200)
      .optional()
      .describe("The document's MIME type; inferred from the bytes, the file name or the response when absent."),
    file_name: z.string().min(1).max(500).optional(),
    title: z
      .string()
      .min(1)
      .max(500)
      .optional()
      .describe("The title; default: the document's own, else its file name."),
    document_key: z
      .string()
      .min(1)
      .max(500)
      .optional()
      .describe("Your stable id for the document: ingesting the same key again replaces it."),
    project_id: projectName.default("default"),
    tags: tagsParam.optional(),
    metadata: metadataParam.optional(),
    extract: z
      .boolean()
      .default(false)
      .describe(
        "Extract memories from the document's chunks in the background (default false). Re-sending the same bytes " +
          "with true starts it; a replacement extracts as this call says.",
      ),
  }),
  output: z.object({
    document_id: z.string(),
    status: z.enum(["ready", "converting"]),
    title: z.string(),
    mime_type: z.string(),
    pages: z.number().int().nullable(),
    sections: z.number().int(),
    chunks: z.number().int(),
    tokens: z.number().int(),
    replaced: z.boolean(),
    unchanged: z.boolean(),
    extraction: z
      .enum(["queued", "off"])
      .describe("queued: memories are extracted in a job (once the document is ready); off: not asked, or no model."),
  }),
  annotations: ANNOTATIONS.write,
  handler: async (input, ctx) => {
    // POST /documents sends the file beside the parameters: it counts as the one source.
    const given = [...SOURCES.filter((s) => input[s] !== undefined), ...(ctx.file ? ["file" as const] : [])];
    if (given.length !== 1)
      throw invalidParameter(
        given.length === 0 ? "url" : given[1]!,
        given.length === 0
          ? "Give one of url, content or content_base64"
          : `Give exactly one of url, content or content_base64${ctx.file ? " or the file" : ""}, not ${given.join(" and ")}`,
        { given },
      );
    const document = await ingestDocument(ctx.scope, ctx.services, {
      source: ctx.file ? { parameter: "file", ...ctx.file } : documentSource(input),
      mimeType: input.mime_type,
      fileName: input.file_name,
      title: input.title,
      documentKey: input.document_key,
      project: input.project_id,
      tags: input.tags,
      metadata: input.metadata,
      extract: input.extract,
      fetch: (...args) => fetch(...args),
    });
    return {
      document_id: document.documentId,
      status: document.status,
      title: document.title,
      mime_type: document.mimeType,
      pages: document.pages,
      sections: document.sections,
      chunks: document.chunks,
      tokens: document.tokens,
      replaced: document.replaced,
      unchanged: document.unchanged,
      extraction: document.extraction,
    };
  },
});

function documentSource(input: { url?: string; content?: string; content_base64?: string }): DocumentSource {
  if (input.url !== undefined) return { parameter: "url", url: input.url };
  if (input.content !== undefined) return { parameter: "content", text: input.content };
  const bytes = bytesOfBase64(input.content_base64!);
  if (!bytes) throw invalidParameter("content_base64", "content_base64 is not valid base64");
  return { parameter: "content_base64", bytes };
}

const sectionOutput = z.object({
  section: z.string().describe('The heading path, "Guide > Install > Linux"; "" before the first heading.'),
  page: z.number().int().nullable().describe("The page the section starts on (PDF), 1-based."),
  tokens: z.number().int(),
  chunks: z.number().int(),
});

export const memoryGetDocument = defineTool({
  name: "memory_get_document",
  category: "memory",
  title: "Get a document",
  description:
    "A document's status, metadata and sections (each with its page and tokens); with include_markdown, its text as " +
    "converted to Markdown.",
  input: z.object({
    document_id: documentIdParam,
    include_markdown: z.boolean().default(false),
  }),
  output: z.object({
    document_id: z.string(),
    project_id: z.string(),
    document_key: z.string().nullable(),
    status: z.enum(["ready", "converting", "failed"]),
    error: z.string().nullable(),
    title: z.string(),
    file_name: z.string().nullable(),
    url: z.string().nullable(),
    mime_type: z.string(),
    bytes: z.number().int(),
    sha256: z.string(),
    pages: z.number().int().nullable(),
    sections: z.array(sectionOutput),
    chunks: z.number().int(),
    tokens: z.number().int(),
    tags: z.array(z.string()),
    metadata: z.record(z.string(), z.unknown()),
    extract: z.boolean().describe("Memories are extracted from its chunks."),
    extracted_chunks: z
      .number()
      .int()
      .describe("Chunks extraction has read so far (all of them when it is done; 0 without extract)."),
    created_at: z.string(),
    updated_at: z.string(),
    markdown: z.string().optional(),
  }),
  annotations: ANNOTATIONS.read,
  handler: async (input, ctx) => {
    const row = await readDocument(ctx.scope, input.document_id);
    if (!row) throw notFound(`No document ${input.document_id}`, { document_id: input.document_id });
    const markdown = input.include_markdown
      ? await (await ctx.services.originals.get(markdownKey(ctx.scope.tenantId, row.id, row.sha256)))?.text()
      : undefined;
    return { ...documentOutput(row), ...(markdown !== undefined ? { markdown } : {}) };
  },
});

function documentOutput(row: DocumentRow) {
  return {
    document_id: row.id,
    project_id: row.project,
    document_key: row.document_key,
    status: row.status as "ready" | "converting" | "failed",
    error: row.error,
    title: row.title,
    file_name: row.file_name,
    url: row.url,
    mime_type: row.mime_type,
    bytes: row.bytes,
    sha256: row.sha256,
    pages: row.pages,
    sections: JSON.parse(row.sections) as SectionSummary[],
    chunks: row.chunks,
    tokens: row.tokens,
    tags: JSON.parse(row.tags) as string[],
    metadata: JSON.parse(row.metadata) as Record<string, unknown>,
    extract: row.extract === 1,
    extracted_chunks: Math.min(row.extracted_count, row.chunks),
    created_at: iso(row.created_at),
    updated_at: iso(row.updated_at),
  };
}

export const memoryDeleteDocument = defineTool({
  name: "memory_delete_document",
  category: "memory",
  title: "Delete a document",
  description:
    "Delete a document with everything of it: its chunks, their vectors and links, memories derived only from it, and " +
    "the original and Markdown kept for it.",
  input: z.object({ document_id: documentIdParam }),
  output: z.object({ document_id: z.string(), deleted: z.literal(true), chunks: z.number().int() }),
  annotations: ANNOTATIONS.destroy,
  handler: async (input, ctx) => {
    const row = await readDocument(ctx.scope, input.document_id);
    if (!row) throw notFound(`No document ${input.document_id}`, { document_id: input.document_id });
    const chunks = await deleteDocument(ctx.scope, ctx.services, row.id);
    return { document_id: row.id, deleted: true as const, chunks };
  },
});
