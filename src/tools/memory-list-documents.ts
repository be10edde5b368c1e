import { z } from "zod";
import { type ListPosition, listDocuments } from "../core/documents/document-rows";
import { invalidParameter } from "../errors";
import { ANNOTATIONS, defineTool } from "./define-tool";
import { iso, projectName } from "./params";

// A project's documents, newest first, for apps and the dashboard's documents page: what each is and its status,
// without its sections (memory_get_document gives those).

/** The most documents one call lists: each row is small, and a page this long still reads in one short query. */
const MAX_DOCUMENTS_PAGE = 100;

export const memoryListDocuments = defineTool({
  name: "memory_list_documents",
  category: "memory",
  title: "List documents",
  description:
    "A project's documents (memory_ingest_document), newest first: each one's id, title, file name or URL, type, size, " +
    "pages, status and error, and its section, chunk and token counts. memory_get_document gives one document's " +
    `sections. Up to ${MAX_DOCUMENTS_PAGE} a call; when more follow, next_cursor is set: pass it as cursor for the next page.`,
  input: z.object({
    project_id: projectName.default("default"),
    limit: z
      .number()
      .int()
      .min(1)
      .max(MAX_DOCUMENTS_PAGE)
      .default(50)
      .describe(`How many documents to list, 1 to ${MAX_DOCUMENTS_PAGE}.`),
    cursor: z
      .string()
      .min(1)
      .max(500)
      .optional()
      .describe("The next_cursor of the previous page; absent: the first page."),
  }),
  output: z.object({
    documents: z.array(
      z.object({
        document_id: z.string(),
        document_key: z.string().nullable(),
        title: z.string(),
        file_name: z.string().nullable(),
        url: z.string().nullable(),
        mime_type: z.string(),
        bytes: z.number().int(),
        pages: z.number().int().nullable(),
        sections: z.number().int(),
        chunks: z.number().int(),
        tokens: z.number().int(),
        status: z.enum(["ready", "converting", "failed"]),
        error: z.string().nullable(),
        created_at: z.string(),
        updated_at: z.string(),
      }),
    ),
    next_cursor: z.string().nullable().describe("Pass as cursor for the next page; null on the last page."),
  }),
  annotations: ANNOTATIONS.read,
  handler: async (input, ctx) => {
    const after = input.cursor === undefined ? null : decodeCursor(input.cursor);
    const page = await listDocuments(ctx.scope, input.project_id, input.limit, after);
    return {
      documents: page.rows.map((r) => ({
        document_id: r.id,
        document_key: r.document_key,
        title: r.title,
        file_name: r.file_name,
        url: r.url,
        mime_type: r.mime_type,
        bytes: r.bytes,
        pages: r.pages,
        sections: r.sections,
        chunks: r.chunks,
        tokens: r.tokens,
        status: r.status as "ready" | "converting" | "failed",
        error: r.error,
        created_at: iso(r.created_at),
        updated_at: iso(r.updated_at),
      })),
      next_cursor: page.next ? encodeCursor(page.next) : null,
    };
  },
});

// The cursor is the last row's position, opaque to the caller (base64url) so it is passed back as it came.
function encodeCursor(position: ListPosition): string {
  return btoa(`${position.createdAt}.${position.id}`).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
}

function decodeCursor(cursor: string): ListPosition {
  let text = "";
  try {
    text = atob(cursor.replace(/-/g, "+").replace(/_/g, "/"));
  } catch {}
  const match = /^(-?\d{1,16})\.(.+)$/s.exec(text);
  if (!match)
    throw invalidParameter(
      "cursor",
      "Invalid parameter 'cursor': not a next_cursor this tool gave; omit it for the first page",
    );
  return { createdAt: Number(match[1]), id: match[2]! };
}
