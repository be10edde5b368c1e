import { scopeAllowsProject, type TenantScope } from "../../db/scope";
import { AppError, invalidParameter, permissionDenied } from "../../errors";
import type { Services } from "../../ports";
import { bumpCacheGenerations } from "../context/cache-generation";
import { rewriteChunkContexts } from "../keyword-index/indexing";
import { readSegmentKeys } from "../working-set/segments";
import { deleteItems } from "./delete-items";
import { MAX_ITEM_CHARS, type NewItem } from "./item-types";
import { chunkContext, queueEmbedding, writeItems } from "./items";

/**
 * A backend for Anthropic's memory tool (memory_20250818): files under /memories, per tenant and project.
 * A file is a keyed memory (key = its path, items.ts): searchable like any memory, each edit a new version
 * with the previous one kept as history (tier 'superseded'). Directories are the paths' prefixes. Commands,
 * answers and errors follow the tool's documentation and the Anthropic SDK's reference implementation
 * (BetaLocalFilesystemMemoryTool), so a handler can pass them to Claude as they are.
 */

export const MEMORY_ROOT = "/memories";
/** Longest path accepted (it is the item's key and file path, and part of its indexed context). */
export const MAX_PATH_CHARS = 500;
/** The tool's own limit on a viewed file. */
const MAX_LINES = 999_999;
const NUMBER_WIDTH = String(MAX_LINES).length;
/** Tags every memory file carries, so the files can be told from other memories. */
const FILE_TAG = "memory-file";

/** A memory path, checked and made canonical (no trailing slash); refuses anything outside /memories. */
export function memoryPath(path: string, parameter = "path"): string {
  const refuse = (why: string) => invalidParameter(parameter, why, { path });
  if (!path.startsWith(MEMORY_ROOT) || (path.length > MEMORY_ROOT.length && path[MEMORY_ROOT.length] !== "/"))
    throw refuse(`Path must start with ${MEMORY_ROOT}, got: ${path}`);
  if (path.length > MAX_PATH_CHARS) throw refuse(`Path is ${path.length} characters long; at most ${MAX_PATH_CHARS}`);
  // Encoded or Windows separators and control characters have no place in a memory path.
  // biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what this refuses
  if (/%2e|%2f|%5c|\\|[\u0000-\u001f\u007f]/i.test(path))
    throw refuse(`Path ${path} would escape ${MEMORY_ROOT} directory`);
  const trimmed = path.length > MEMORY_ROOT.length ? path.replace(/\/+$/, "") : path;
  const segments = trimmed.slice(MEMORY_ROOT.length + 1).split("/");
  if (trimmed !== MEMORY_ROOT && segments.some((s) => s === "" || s === "." || s === ".."))
    throw refuse(`Path ${path} would escape ${MEMORY_ROOT} directory`);
  return trimmed;
}

interface StoredFile {
  id: string;
  path: string;
  bytes: number;
  content: string;
}

/**
 * The current version of every file at or under `path` (a file, or a directory's files), by path; with
 * `withContent`, the text of the file at `path` itself only (a directory's files are listed by size, not read).
 */
async function filesAt(scope: TenantScope, project: string, path: string, withContent: boolean): Promise<StoredFile[]> {
  checkProject(scope, project);
  const { results } = await scope.d1
    .prepare(
      `SELECT id, key AS path, length(CAST(content AS BLOB)) AS bytes${withContent ? ", CASE WHEN key = ?3 THEN content ELSE '' END AS content" : ", '' AS content"} FROM items
       WHERE tenant_id = ?1 AND project = ?2 AND key IS NOT NULL AND (key = ?3 OR (key > ?3 || '/' AND key < ?3 || '0')) AND tier <> 'superseded'
       ORDER BY key`,
    )
    .bind(scope.tenantId, project, path)
    .all<StoredFile>();
  // Keys of other memories (user.city) do not start with /memories; one stored with such a key reads as a file.
  return results;
}

function checkProject(scope: TenantScope, project: string): void {
  if (!scopeAllowsProject(scope, project))
    throw permissionDenied(
      `This key may not touch namespace '${project}'; it is limited to: ${scope.projects!.join(", ")}`,
    );
}

const failure = (message: string, details: Record<string, unknown> = {}) =>
  new AppError("INVALID_PARAMETER", message, details);
const missing = (path: string) =>
  new AppError("NOT_FOUND", `The path ${path} does not exist. Please provide a valid path.`, { path });

/** The size the tool shows: 0B, 512B, 1.5K, 2M. */
export function formatSize(bytes: number): string {
  if (bytes === 0) return "0B";
  const unit = Math.min(3, Math.floor(Math.log(bytes) / Math.log(1024)));
  const size = bytes / 1024 ** unit;
  return (size % 1 === 0 ? String(size) : size.toFixed(1)) + ["B", "K", "M", "G"][unit];
}

const numbered = (lines: string[], first: number) =>
  lines.map((line, i) => `${String(first + i).padStart(NUMBER_WIDTH, " ")}\t${line}`).join("\n");

/** view: a file with line numbers (all, or `range` [start, end], end -1 = to the end), or a directory two levels deep. */
export async function viewPath(
  scope: TenantScope,
  project: string,
  rawPath: string,
  range?: [number, number],
): Promise<string> {
  const path = memoryPath(rawPath);
  const files = await filesAt(scope, project, path, true);
  const file = files.find((f) => f.path === path);
  if (file) {
    const lines = file.content.split("\n");
    if (lines.length > MAX_LINES)
      throw failure(
        `File ${path} has too many lines (${lines.length}). Maximum is ${MAX_LINES.toLocaleString("en-US")} lines.`,
      );
    if (!range) return `Here's the content of ${path} with line numbers:\n${numbered(lines, 1)}`;
    const [start, end] = range;
    if (
      !Number.isInteger(start) ||
      start < 1 ||
      start > lines.length ||
      !Number.isInteger(end) ||
      (end !== -1 && (end < start || end > lines.length))
    ) {
      throw invalidParameter(
        "view_range",
        `Invalid \`view_range\`: [${start}, ${end}]. It should be [start, end] with 1 <= start <= end <= ${lines.length}, or end -1 for the rest of the file`,
      );
    }
    return `Here's the content of ${path} with line numbers:\n${numbered(lines.slice(start - 1, end === -1 ? lines.length : end), start)}`;
  }
  if (files.length === 0 && path !== MEMORY_ROOT) throw missing(path);
  if (range) throw invalidParameter("view_range", `view_range applies to files; ${path} is a directory`);
  // Entries one and two levels below `path`: files, and directories (sized by the files they hold).
  const entries = new Map<string, number>();
  for (const f of files) {
    const parts = f.path.slice(path.length + 1).split("/");
    for (let depth = 1; depth <= Math.min(2, parts.length); depth++) {
      const isDirectory = depth < parts.length;
      const name = `${parts.slice(0, depth).join("/")}${isDirectory ? "/" : ""}`;
      entries.set(name, (entries.get(name) ?? 0) + f.bytes);
    }
  }
  const total = files.reduce((sum, f) => sum + f.bytes, 0);
  const listed = [...entries]
    .filter(([name]) => !name.split("/").some((p) => p.startsWith(".") || p === "node_modules"))
    .sort(([a], [b]) => (a < b ? -1 : 1));
  return [
    `Here're the files and directories up to 2 levels deep in ${path}, excluding hidden items and node_modules:`,
    `${formatSize(total)}\t${path}`,
    ...listed.map(([name, bytes]) => `${formatSize(bytes)}\t${path}/${name}`),
  ].join("\n");
}

/** Stores a file's new text as its next version (the previous one stays as history). */
async function writeFile(
  scope: TenantScope,
  services: Services,
  project: string,
  path: string,
  content: string,
  parameter: string,
): Promise<void> {
  if (content.trim().length === 0)
    throw invalidParameter(
      parameter,
      `${path} would be empty: every file is stored as a searchable memory, which holds some text; delete the file instead`,
    );
  if (content.length > MAX_ITEM_CHARS)
    throw invalidParameter(
      parameter,
      `${path} would be ${content.length} characters; a memory file holds at most ${MAX_ITEM_CHARS}`,
    );
  await writeItems(scope, services, [
    {
      project,
      kind: "memory",
      type: "note",
      content,
      key: path,
      filePath: path,
      tags: [FILE_TAG],
      metadata: { memory_file: path },
    },
  ]);
}

/** What stands at or around `path`: the file there, whether files lie below it, and the nearest file among its parents. */
async function occupied(
  scope: TenantScope,
  project: string,
  path: string,
): Promise<{ file: boolean; below: boolean; parentFile: string | null }> {
  const parents: string[] = [];
  for (let at = path.lastIndexOf("/"); at > MEMORY_ROOT.length; at = path.lastIndexOf("/", at - 1))
    parents.push(path.slice(0, at));
  const { results } = await scope.d1
    .prepare(
      `SELECT key FROM items WHERE tenant_id = ?1 AND project = ?2 AND key IS NOT NULL AND tier <> 'superseded'
       AND (key = ?3 OR (key > ?3 || '/' AND key < ?3 || '0') OR key IN (SELECT value FROM json_each(?4))) LIMIT 3`,
    )
    .bind(scope.tenantId, project, path, JSON.stringify(parents))
    .all<{ key: string }>();
  return {
    file: results.some((r) => r.key === path),
    below: results.some((r) => r.key.startsWith(`${path}/`)),
    parentFile: results.find((r) => parents.includes(r.key))?.key ?? null,
  };
}

/** create: a new file; an existing file, a directory or a file among its parents is refused. */
export async function createFile(
  scope: TenantScope,
  services: Services,
  project: string,
  rawPath: string,
  text: string,
): Promise<string> {
  const path = memoryPath(rawPath);
  checkProject(scope, project);
  if (path === MEMORY_ROOT) throw failure(`${MEMORY_ROOT} is a directory; name a file in it`, { path });
  const at = await occupied(scope, project, path);
  if (at.file) throw new AppError("CONFLICT", `File ${path} already exists`, { path });
  if (at.below) throw new AppError("CONFLICT", `The path ${path} is a directory`, { path });
  if (at.parentFile)
    throw new AppError("CONFLICT", `${at.parentFile} is a file, so ${path} cannot be created below it`, { path });
  await writeFile(scope, services, project, path, text, "file_text");
  return `File created successfully at: ${path}`;
}

async function currentFile(scope: TenantScope, project: string, path: string): Promise<StoredFile> {
  const files = await filesAt(scope, project, path, true);
  const file = files.find((f) => f.path === path);
  if (file) return file;
  if (files.length > 0) throw failure(`The path ${path} is not a file.`, { path });
  throw missing(path);
}

/** Where each occurrence of `needle` starts, as 1-based line numbers. */
function occurrenceLines(content: string, needle: string): number[] {
  const lines: number[] = [];
  for (let at = content.indexOf(needle); at >= 0; at = content.indexOf(needle, at + needle.length))
    lines.push(content.slice(0, at).split("\n").length);
  return lines;
}

/** str_replace: replaces `oldStr`, which must occur exactly once, and shows the lines around the change. */
export async function replaceInFile(
  scope: TenantScope,
  services: Services,
  project: string,
  rawPath: string,
  oldStr: string,
  newStr: string,
): Promise<string> {
  const path = memoryPath(rawPath);
  if (oldStr.length === 0) throw invalidParameter("old_str", "old_str must not be empty");
  const file = await currentFile(scope, project, path);
  const found = occurrenceLines(file.content, oldStr);
  if (found.length === 0)
    throw failure(`No replacement was performed, old_str \`${oldStr}\` did not appear verbatim in ${path}.`, { path });
  if (found.length > 1)
    throw failure(
      `No replacement was performed. Multiple occurrences of old_str \`${oldStr}\` in lines: ${found.join(", ")}. Please ensure it is unique`,
      { path, lines: found },
    );
  const at = file.content.indexOf(oldStr);
  const content = file.content.slice(0, at) + newStr + file.content.slice(at + oldStr.length);
  await writeFile(scope, services, project, path, content, "new_str");
  const lines = content.split("\n");
  const changed = found[0]! - 1;
  const from = Math.max(0, changed - 2);
  const to = Math.min(lines.length, changed + newStr.split("\n").length + 2);
  return `The memory file has been edited. Here is the snippet showing the change (with line numbers):\n${numbered(lines.slice(from, to), from + 1)}`;
}

/** insert: `text` after line `line` (0 = at the start). */
export async function insertInFile(
  scope: TenantScope,
  services: Services,
  project: string,
  rawPath: string,
  line: number,
  text: string,
): Promise<string> {
  const path = memoryPath(rawPath);
  const file = await currentFile(scope, project, path);
  const lines = file.content.split("\n");
  if (!Number.isInteger(line) || line < 0 || line > lines.length) {
    throw invalidParameter(
      "insert_line",
      `Invalid \`insert_line\` parameter: ${line}. It should be within the range of lines of the file: [0, ${lines.length}]`,
    );
  }
  lines.splice(line, 0, text.replace(/\n$/, ""));
  await writeFile(scope, services, project, path, lines.join("\n"), "insert_text");
  return `The file ${path} has been edited.`;
}

/** Every version of the files at or under `path` (the current ones and their history). */
async function allVersionIds(scope: TenantScope, project: string, path: string): Promise<string[]> {
  const { results } = await scope.d1
    .prepare(
      `SELECT id FROM items WHERE tenant_id = ?1 AND project = ?2 AND key IS NOT NULL AND (key = ?3 OR (key > ?3 || '/' AND key < ?3 || '0'))`,
    )
    .bind(scope.tenantId, project, path)
    .all<{ id: string }>();
  return results.map((r) => r.id);
}

/** delete: a file or a directory with everything in it, history included. */
export async function deletePath(
  scope: TenantScope,
  services: Services,
  project: string,
  rawPath: string,
): Promise<string> {
  const path = memoryPath(rawPath);
  if (path === MEMORY_ROOT) throw failure(`Cannot delete the ${MEMORY_ROOT} directory itself`, { path });
  const current = await filesAt(scope, project, path, false);
  if (current.length === 0) throw new AppError("NOT_FOUND", `The path ${path} does not exist`, { path });
  const keys = await readSegmentKeys(scope, project, await allVersionIds(scope, project, path));
  await deleteItems(scope, services, [...keys.values()]);
  return `Successfully deleted ${path}`;
}

/** rename: a file or directory to a path where nothing is; versions and ids move with it. */
export async function renamePath(
  scope: TenantScope,
  services: Services,
  project: string,
  rawOld: string,
  rawNew: string,
): Promise<string> {
  const from = memoryPath(rawOld, "old_path");
  const to = memoryPath(rawNew, "new_path");
  if (from === MEMORY_ROOT || to === MEMORY_ROOT)
    throw failure(`Cannot rename the ${MEMORY_ROOT} directory`, { old_path: rawOld, new_path: rawNew });
  if (to === from || to.startsWith(`${from}/`))
    throw invalidParameter("new_path", `Cannot move ${from} into itself (${to})`);
  const moving = await filesAt(scope, project, from, false);
  if (moving.length === 0) throw new AppError("NOT_FOUND", `The path ${from} does not exist`, { path: from });
  const target = await occupied(scope, project, to);
  if (target.file || target.below) throw new AppError("CONFLICT", `The destination ${to} already exists`, { path: to });
  if (target.parentFile)
    throw new AppError("CONFLICT", `${target.parentFile} is a file, so ${to} cannot be created below it`, { path: to });
  const moves = moving.map((f) => ({ id: f.id, from: f.path, to: to + f.path.slice(from.length) }));
  for (const m of moves)
    if (m.to.length > MAX_PATH_CHARS)
      throw invalidParameter("new_path", `${m.to} would be ${m.to.length} characters long; at most ${MAX_PATH_CHARS}`);
  const json = JSON.stringify(moves.map((m) => [m.from, m.to]));
  // The current versions' chunks carry the path as indexed context (items.ts chunkContext): rewritten with it.
  const { results: chunks } = await scope.d1
    .prepare(
      `SELECT c.id, c.content, c.fts_tokens, c.item_id, i.tags FROM chunks c JOIN items i ON i.tenant_id = c.tenant_id AND i.id = c.item_id
       WHERE c.tenant_id = ? AND c.item_id IN (SELECT value FROM json_each(?))`,
    )
    .bind(scope.tenantId, JSON.stringify(moves.map((m) => m.id)))
    .all<{ id: number; content: string; fts_tokens: number | null; item_id: string; tags: string }>();
  const newPathOf = new Map(moves.map((m) => [m.id, m.to]));
  const contextOf = (c: (typeof chunks)[number]) =>
    chunkContext({ filePath: newPathOf.get(c.item_id)!, tags: JSON.parse(c.tags) as string[] } as NewItem, undefined);
  await scope.d1.batch([
    scope.d1
      .prepare(
        `UPDATE items SET key = m.value ->> 1, file_path = m.value ->> 1, metadata = json_set(metadata, '$.memory_file', m.value ->> 1)
         FROM json_each(?3) m WHERE items.tenant_id = ?1 AND items.project = ?2 AND items.key = m.value ->> 0`,
      )
      .bind(scope.tenantId, project, json),
    ...rewriteChunkContexts(
      scope,
      chunks.map((c) => ({ id: c.id, content: c.content, context: contextOf(c), ftsTokens: c.fts_tokens })),
    ),
    ...bumpCacheGenerations(scope, new Set([project])),
  ]);
  // The embedded text includes the context: the moved files are embedded again.
  await queueEmbedding(
    scope,
    services,
    moves.map((m) => m.id),
  );
  return `Successfully renamed ${from} to ${to}`;
}
