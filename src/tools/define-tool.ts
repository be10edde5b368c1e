import type { z } from "zod";
import type { AuthenticatedKey } from "../control/tenants";
import type { Scope } from "../core/tenants/api-keys";
import type { TenantScope } from "../db/scope";
import type { AppError } from "../errors";
import type { Services } from "../ports";
import { strictInput } from "../validation";

/** Tool families. Each is also a toolset a client can enable with `/mcp?toolsets=...`. */
export const CATEGORIES = ["meta", "memory", "memory_files", "context", "conversation", "graph", "gc"] as const;
export type Category = (typeof CATEGORIES)[number];

export interface ToolAnnotations {
  readOnlyHint: boolean;
  destructiveHint?: boolean;
  idempotentHint?: boolean;
  openWorldHint?: boolean;
}

/**
 * The annotation presets every tool picks from. readOnlyHint also decides the scope a call needs
 * (read vs write); idempotentHint says whether repeating the call changes more than the first did.
 */
export const ANNOTATIONS = {
  read: { readOnlyHint: true, idempotentHint: true, openWorldHint: false },
  /** Writes that converge: repeating them leaves the same state (store with dedupe, tag, pin). */
  write: { readOnlyHint: false, destructiveHint: false, idempotentHint: true, openWorldHint: false },
  /** Writes that add each time (log a message, create a task or snapshot). */
  append: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: false },
  destroy: { readOnlyHint: false, destructiveHint: true, idempotentHint: false, openWorldHint: false },
} as const satisfies Record<string, ToolAnnotations>;

export interface ToolContext {
  scope: TenantScope;
  caller: AuthenticatedKey;
  services: Services;
  /** Every tool the server has, for list_tool_identifiers. */
  catalog: readonly AnyTool[];
  /** Spends a tool call of the key's and the tenant's rate limits; the error that refuses the call, or null. */
  chargeToolCall(): Promise<AppError | null>;
  /** Charges the tool calls of a JSON-RPC batch up front, in one limiter call; chargeToolCall then spends them. */
  reserveToolCalls(count: number): void;
  /** A file a route received outside JSON (POST /documents), for the one call it makes: memory_ingest_document's source. */
  file?: UploadedFile;
}

/** A file's bytes as a route received them, with the type and name the request gave (null when it gave none). */
export interface UploadedFile {
  bytes: Uint8Array;
  contentType: string | null;
  fileName: string | null;
}

export interface ToolDefinition<Input extends z.ZodObject, Output> {
  name: string;
  category: Category;
  /** In the default toolset (`core`): store, search, context building, conversations. */
  core?: boolean;
  title: string;
  /** Written for an agent: what it does, when to call it, what it returns. */
  description: string;
  input: Input;
  /** Shape of the result; object outputs become MCP `structuredContent` as they are. */
  output: z.ZodType<Output>;
  annotations: ToolAnnotations;
  /** The scope a call needs when it is more than its annotations say (admin: work an operator starts). */
  scope?: Scope;
  handler: (input: z.output<Input>, ctx: ToolContext) => Promise<Output>;
  /**
   * Optional: many calls at once, results in the same order, all or nothing (one D1 batch). A JSON-RPC
   * batch's consecutive calls to the tool run through it.
   */
  handleMany?: (inputs: z.output<Input>[], ctx: ToolContext) => Promise<Output[]>;
}

// biome-ignore lint/suspicious/noExplicitAny: a registry of tools with different outputs; each handler is typed where defined
export type AnyTool = ToolDefinition<z.ZodObject, any>;

/**
 * Declares a tool with full type inference between its input schema and handler. Its arguments object
 * is strict: an unknown argument name is refused with the accepted names (a misspelt `namespace` must
 * not silently write to `default`), and tools/list says `additionalProperties: false`.
 */
export function defineTool<Input extends z.ZodObject, Output>(tool: ToolDefinition<Input, Output>): AnyTool {
  return { ...tool, input: strictInput(tool.input) } as unknown as AnyTool;
}

export function requiredScope(tool: AnyTool): Scope {
  return tool.scope ?? (tool.annotations.readOnlyHint ? "read" : "write");
}
