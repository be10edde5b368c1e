import type { Context } from "hono";
import { bodyLimit } from "hono/body-limit";
import { readConfig } from "../config";
import { invalidParameter, toAppError } from "../errors";
import { callTool } from "../mcp/dispatch";
import type { ToolContext, UploadedFile } from "../tools/define-tool";
import { TOOLS_BY_NAME } from "../tools/index";
import { parseToolsets } from "../tools/toolsets";
import type { AppBindings } from "./context";
import { errorResponse } from "./responses";

// POST /documents: a document for apps and people, without base64 in JSON. The body is the file itself (its
// Content-Type says what it is; the tool's other parameters in the query), or a multipart form (a `file` part, or a
// `url` or `content` field, and the other parameters as fields or in the query, a field winning). It runs memory_ingest_document through the same path
// as every tool call (scope, projects, limits, usage log) and answers what the tool answers.

/** The parameters besides the source, as text: a form's fields, else the query's. */
const TEXT_PARAMETERS = ["mime_type", "file_name", "title", "document_key", "project_id", "url", "content"] as const;
/** Room for a form's boundaries and fields beside the largest document. */
const FORM_ROOM = 1_048_576;
/** Types that say nothing of the bytes: the tool infers the type instead. */
const UNTYPED = new Set(["application/octet-stream", "binary/octet-stream", ""]);

/** The body limit of POST /documents: the largest document (DOCUMENT_MAX_BYTES) and a form's room. */
export function documentBodyLimit(c: Context<AppBindings>, next: () => Promise<void>) {
  const maxSize = readConfig(c.env).documents.maxBytes + FORM_ROOM;
  return bodyLimit({
    maxSize,
    onError: (c) =>
      errorResponse(
        c,
        invalidParameter("file", `The request body exceeds ${maxSize} bytes (DOCUMENT_MAX_BYTES and a form's room)`, {
          limit: maxSize,
        }),
      ),
  })(c, next);
}

/** The upload's answer: memory_ingest_document's result, or its error with the HTTP status of the admin API. */
export async function uploadDocument(c: Context<AppBindings>, ctx: ToolContext): Promise<Response> {
  let request: { args: Record<string, unknown>; file: UploadedFile | null };
  try {
    request = await readUpload(c);
  } catch (error) {
    return errorResponse(c, toAppError(error));
  }
  const outcome = await callTool(TOOLS_BY_NAME, parseToolsets("all", "all"), "memory_ingest_document", request.args, {
    ...ctx,
    ...(request.file ? { file: request.file } : {}),
  });
  return outcome.ok ? c.json(outcome.value as Record<string, unknown>) : errorResponse(c, outcome.error);
}

async function readUpload(
  c: Context<AppBindings>,
): Promise<{ args: Record<string, unknown>; file: UploadedFile | null }> {
  const type = (c.req.header("content-type") ?? "").split(";")[0]!.trim().toLowerCase();
  if (type === "multipart/form-data") return readForm(c);
  const bytes = new Uint8Array(await c.req.arrayBuffer());
  const args = parameters((name) => c.req.queries(name) ?? []);
  // An empty body with a url or content in the query: that is the source, and no file.
  if (bytes.byteLength === 0 && ("url" in args || "content" in args)) return { args, file: null };
  return { args, file: { bytes, contentType: UNTYPED.has(type) ? null : type, fileName: null } };
}

async function readForm(
  c: Context<AppBindings>,
): Promise<{ args: Record<string, unknown>; file: UploadedFile | null }> {
  let form: FormData;
  try {
    form = await c.req.raw.formData();
  } catch {
    throw invalidParameter("file", "The multipart form could not be read (its boundary or parts are broken)");
  }
  // A form's field, else the query's (curl -F file=@x.pdf ".../documents?project_id=ops" means that project).
  const args = parameters((name) => {
    const fields = form.getAll(name).filter((v): v is string => typeof v === "string");
    return fields.length > 0 ? fields : (c.req.queries(name) ?? []);
  });
  const part = form.get("file");
  if (part === null) return { args, file: null };
  if (typeof part === "string")
    throw invalidParameter("file", "The form's `file` must be a file part (with a filename), not a text field");
  const type = part.type.split(";")[0]!.trim().toLowerCase();
  return {
    args,
    file: {
      bytes: new Uint8Array(await part.arrayBuffer()),
      contentType: UNTYPED.has(type) ? null : type,
      fileName: part.name || null,
    },
  };
}

/** The tool's parameters from text values: tags repeated or comma-separated, metadata as JSON, extract as a boolean. */
function parameters(values: (name: string) => string[]): Record<string, unknown> {
  const args: Record<string, unknown> = {};
  for (const name of TEXT_PARAMETERS) {
    const [value] = values(name);
    if (value !== undefined) args[name] = value;
  }
  const tags = values("tags").flatMap((v) =>
    v
      .split(",")
      .map((t) => t.trim())
      .filter(Boolean),
  );
  if (tags.length > 0) args.tags = tags;
  const [metadata] = values("metadata");
  if (metadata !== undefined) {
    try {
      args.metadata = JSON.parse(metadata);
    } catch {
      throw invalidParameter("metadata", "metadata must be a JSON object");
    }
  }
  const [extract] = values("extract");
  if (extract !== undefined) {
    if (extract !== "true" && extract !== "false") throw invalidParameter("extract", "extract must be true or false");
    args.extract = extract === "true";
  }
  return args;
}
