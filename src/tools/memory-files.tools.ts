import { z } from "zod";
import { MAX_ITEM_CHARS } from "../core/memory/item-types";
import {
  createFile,
  deletePath,
  insertInFile,
  MAX_PATH_CHARS,
  renamePath,
  replaceInFile,
  viewPath,
} from "../core/memory/memory-files";
import { ANNOTATIONS, type AnyTool, defineTool } from "./define-tool";
import { projectName } from "./params";

/**
 * Anthropic's memory tool (memory_20250818) as six tools, one per command, each taking that command's
 * arguments as Claude sends them: an application's memory-tool handler forwards `{path, ...}` and returns
 * `output` (or the error's message) to Claude. Files live under /memories in a namespace of the tenant
 * (src/core/memory/memory-files.ts), as memories that search finds like any other.
 */

const path = z
  .string()
  .min(1)
  .max(MAX_PATH_CHARS)
  .describe("A path under /memories, e.g. /memories/notes.md (a directory: /memories/projects).");
const namespace = projectName
  .default("default")
  .describe("Where the files live (a project of the tenant); default 'default'.");
const text = (what: string) => z.string().max(MAX_ITEM_CHARS).describe(what);
const output = z.object({ output: z.string().describe("The answer to give Claude as the memory tool's result.") });
const DOCS = "Part of the backend for Anthropic's memory tool (memory_20250818): ";

const memoryFilesView = defineTool({
  name: "memory_files_view",
  category: "memory_files",
  title: "Memory tool: view",
  description:
    DOCS +
    "shows a file with 6-wide line numbers (all of it, or view_range [start, end], end -1 = to the end), or lists a directory " +
    "two levels deep with sizes. /memories always exists.",
  input: z.object({
    path,
    view_range: z
      .array(z.number().int().min(-1))
      .length(2)
      .optional()
      .describe("[start_line, end_line], 1-based; end -1 for the rest of the file."),
    namespace,
  }),
  output,
  annotations: ANNOTATIONS.read,
  handler: async (input, ctx) => ({
    output: await viewPath(ctx.scope, input.namespace, input.path, input.view_range as [number, number] | undefined),
  }),
});

const memoryFilesCreate = defineTool({
  name: "memory_files_create",
  category: "memory_files",
  title: "Memory tool: create",
  description:
    DOCS +
    "creates a file (its directories are implied). An existing file, a directory, or a path below a file is refused.",
  input: z.object({ path, file_text: text("The file's text."), namespace }),
  output,
  annotations: ANNOTATIONS.append,
  handler: async (input, ctx) => ({
    output: await createFile(ctx.scope, ctx.services, input.namespace, input.path, input.file_text),
  }),
});

const memoryFilesStrReplace = defineTool({
  name: "memory_files_str_replace",
  category: "memory_files",
  title: "Memory tool: str_replace",
  description:
    DOCS +
    "replaces old_str, which must occur exactly once in the file, with new_str (default empty: deletes it). The previous text stays as the file's history.",
  input: z.object({
    path,
    old_str: text("The text to replace: it must occur exactly once."),
    new_str: text("Its replacement (default empty).").default(""),
    namespace,
  }),
  output,
  annotations: ANNOTATIONS.write,
  handler: async (input, ctx) => ({
    output: await replaceInFile(ctx.scope, ctx.services, input.namespace, input.path, input.old_str, input.new_str),
  }),
});

const memoryFilesInsert = defineTool({
  name: "memory_files_insert",
  category: "memory_files",
  title: "Memory tool: insert",
  description: `${DOCS}inserts insert_text after line insert_line (0 = at the start; the file's line count = at the end).`,
  input: z.object({
    path,
    insert_line: z.number().int().min(0).describe("The line to insert after; 0 for the start."),
    insert_text: text("The text to insert."),
    namespace,
  }),
  output,
  annotations: ANNOTATIONS.append,
  handler: async (input, ctx) => ({
    output: await insertInFile(
      ctx.scope,
      ctx.services,
      input.namespace,
      input.path,
      input.insert_line,
      input.insert_text,
    ),
  }),
});

const memoryFilesDelete = defineTool({
  name: "memory_files_delete",
  category: "memory_files",
  title: "Memory tool: delete",
  description:
    DOCS +
    "deletes a file, or a directory with everything in it, history included. /memories itself cannot be deleted.",
  input: z.object({ path, namespace }),
  output,
  annotations: ANNOTATIONS.destroy,
  handler: async (input, ctx) => ({ output: await deletePath(ctx.scope, ctx.services, input.namespace, input.path) }),
});

const memoryFilesRename = defineTool({
  name: "memory_files_rename",
  category: "memory_files",
  title: "Memory tool: rename",
  description:
    DOCS +
    "renames or moves a file or directory (with its history) to a path where nothing is; an existing destination is refused.",
  input: z.object({ old_path: path, new_path: path, namespace }),
  output,
  annotations: ANNOTATIONS.write,
  handler: async (input, ctx) => ({
    output: await renamePath(ctx.scope, ctx.services, input.namespace, input.old_path, input.new_path),
  }),
});

/** The backend of Anthropic's memory tool: files as keyed memories. */
export const MEMORY_FILES_TOOLS: readonly AnyTool[] = [
  memoryFilesView,
  memoryFilesCreate,
  memoryFilesStrReplace,
  memoryFilesInsert,
  memoryFilesDelete,
  memoryFilesRename,
];
