import { jsonrpc, mcpPost, newKey, newTenant, tenantDb } from "./helpers";

// Shared by the registry-driven tests (fuzz, isolation, maxima): the tool list as a client sees it,
// both endpoints reduced to one outcome shape, rotating keys, and per-tenant row fingerprints.

export type JsonSchema = {
  type?: string | string[];
  anyOf?: JsonSchema[];
  enum?: unknown[];
  properties?: Record<string, JsonSchema>;
  required?: string[];
  items?: JsonSchema;
  additionalProperties?: unknown;
  minimum?: number;
  maximum?: number;
  minLength?: number;
  maxLength?: number;
  minItems?: number;
  maxItems?: number;
  default?: unknown;
};

export interface ToolInfo {
  name: string;
  readOnly: boolean;
  schema: JsonSchema;
}

/** Every tool the server lists (tools/list over /jsonrpc?toolsets=all), so a new tool is covered without editing tests. */
export async function listTools(): Promise<ToolInfo[]> {
  const t = await newTenant();
  const body = await (
    await jsonrpc(t.apiKey, { jsonrpc: "2.0", method: "tools/list", id: 1 }, "?toolsets=all")
  ).json<any>();
  return body.result.tools.map((x: any) => ({
    name: x.name,
    readOnly: x.annotations?.readOnlyHint === true,
    schema: x.inputSchema,
  }));
}

export type Endpoint = "jsonrpc" | "mcp";

/** One tool call's answer, whichever endpoint: a result, a clear refusal, or an internal failure. */
export interface Outcome {
  kind: "result" | "refused" | "internal";
  /** JSON-RPC code (number) or the AppError code (string) of a refusal. */
  code?: number | string;
  /** AppError code when the server sent one (INVALID_PARAMETER, NOT_FOUND, ...). */
  appCode?: string;
  message: string;
  status: number;
  /** The whole answer as text, for leak scans and failure messages. */
  text: string;
  value?: unknown;
}

export interface ToolCall {
  name: string;
  args: unknown;
}

function rpcOutcome(status: number, body: any): Outcome {
  const text = JSON.stringify(body ?? null);
  if (status >= 500) return { kind: "internal", status, message: `HTTP ${status}`, text };
  if (body?.error) {
    const appCode = body.error.data?.code;
    const internal = body.error.code === -32603 || appCode === "INTERNAL_ERROR";
    return {
      kind: internal ? "internal" : "refused",
      code: body.error.code,
      appCode,
      message: String(body.error.message),
      status,
      text,
    };
  }
  if (body && "result" in body) return { kind: "result", status, message: "", text, value: body.result };
  return { kind: "internal", status, message: `unexpected answer: ${text.slice(0, 300)}`, text };
}

/** Up to 50 tool calls in one /jsonrpc batch; answers in call order. */
export async function jsonrpcBatch(apiKey: string, calls: ToolCall[]): Promise<Outcome[]> {
  const body = calls.map((c, i) => ({
    jsonrpc: "2.0",
    id: i + 1,
    method: "tools/call",
    params: { name: c.name, arguments: c.args },
  }));
  const response = await jsonrpc(apiKey, body);
  const status = response.status;
  const raw = await response.text();
  let answers: any;
  try {
    answers = JSON.parse(raw);
  } catch {
    return calls.map(() => ({
      kind: "internal" as const,
      status,
      message: `not JSON (HTTP ${status}): ${raw.slice(0, 200)}`,
      text: raw,
    }));
  }
  if (!Array.isArray(answers)) return calls.map(() => rpcOutcome(status, answers));
  const byId = new Map(answers.map((a: any) => [a.id, a]));
  return calls.map((_, i) =>
    rpcOutcome(status, byId.get(i + 1) ?? { error: { code: 0, message: "no answer for this call" } }),
  );
}

/** Indexes of the calls a batch refused for D1's queries per invocation (retryable: sent again in a new request). */
function budgetRefused(outcomes: Outcome[]): number[] {
  return outcomes.flatMap((o, j) =>
    o.kind === "refused" && JSON.parse(o.text)?.error?.data?.details?.reason === "d1_queries_per_invocation" ? [j] : [],
  );
}

/** A raw MCP tools/call POST (no initialize: the endpoint is stateless), every toolset enabled. */
export async function mcpCall(apiKey: string, name: string, args: unknown): Promise<Outcome> {
  const response = await mcpPost(
    apiKey,
    { jsonrpc: "2.0", id: 1, method: "tools/call", params: { name, arguments: args } },
    { query: "?toolsets=all" },
  );
  return mcpOutcome(response);
}

export async function mcpOutcome(response: Response): Promise<Outcome> {
  const status = response.status;
  const raw = await response.text();
  let body: any;
  try {
    body = JSON.parse(raw);
  } catch {
    return { kind: "internal", status, message: `not JSON (HTTP ${status}): ${raw.slice(0, 200)}`, text: raw };
  }
  if (status >= 500 || body?.error) return rpcOutcome(status, body);
  const result = body?.result;
  if (result?.isError) {
    const error = result.structuredContent?.error ?? safeParse(result.content?.[0]?.text)?.error ?? {};
    const kind = error.code === "INTERNAL_ERROR" ? "internal" : "refused";
    return {
      kind,
      code: error.code,
      appCode: error.code,
      message: String(error.message ?? result.content?.[0]?.text ?? ""),
      status,
      text: raw,
    };
  }
  if (result && Array.isArray(result.content))
    return { kind: "result", status, message: "", text: raw, value: result.structuredContent ?? result.content };
  return { kind: "internal", status, message: `unexpected answer: ${raw.slice(0, 300)}`, text: raw };
}

function safeParse(text: unknown): any {
  try {
    return typeof text === "string" ? JSON.parse(text) : undefined;
  } catch {
    return undefined;
  }
}

/** Hands out keys of one tenant, a fresh one every `per` calls, so the per-key rate limit stays out of the way. */
export class KeyPool {
  private key: string | null = null;
  private used = 0;
  constructor(
    readonly tenantId: string,
    private readonly options: { scopes?: string[]; projects?: string[] } = {},
    private readonly per = 25,
  ) {}

  async take(calls = 1): Promise<string> {
    if (this.key === null || this.used + calls > this.per) {
      this.key = (await newKey(this.tenantId, this.options)).apiKey;
      this.used = 0;
    }
    this.used += calls;
    return this.key;
  }
}

/** /mcp requests in flight at once (each is one call; order of answers is kept). */
const MCP_IN_FLIGHT = 4;

/** Runs calls over an endpoint: /jsonrpc in batches (one fresh key each), /mcp one request a call, a few at a time. */
export async function runCalls(
  endpoint: Endpoint,
  keys: KeyPool,
  calls: ToolCall[],
  batchSize = 25,
): Promise<Outcome[]> {
  const outcomes: Outcome[] = [];
  if (endpoint === "jsonrpc") {
    for (let i = 0; i < calls.length; i += batchSize) {
      const slice = calls.slice(i, i + batchSize);
      const answered = await jsonrpcBatch(await keys.take(batchSize), slice);
      // Run with D1_QUERIES_PER_INVOCATION=50 (the Free plan), a batch answers the calls its budget covers and
      // refuses the rest retryably, as a client would then send them again: so do these tests, until all are answered.
      for (let again = budgetRefused(answered); again.length > 0; ) {
        const retried = await jsonrpcBatch(
          await keys.take(again.length),
          again.map((j) => slice[j]!),
        );
        again.forEach((j, k) => (answered[j] = retried[k]!));
        const left = budgetRefused(answered);
        if (left.length >= again.length) break; // no progress: leave the refusals for the test to judge
        again = left;
      }
      outcomes.push(...answered);
    }
    return outcomes;
  }
  for (let i = 0; i < calls.length; i += MCP_IN_FLIGHT) {
    const slice = calls.slice(i, i + MCP_IN_FLIGHT);
    const apiKeys: string[] = [];
    for (const _ of slice) apiKeys.push(await keys.take());
    outcomes.push(...(await Promise.all(slice.map((c, j) => mcpCall(apiKeys[j]!, c.name, c.args)))));
  }
  return outcomes;
}

export async function runOne(endpoint: Endpoint, keys: KeyPool, c: ToolCall): Promise<Outcome> {
  return (await runCalls(endpoint, keys, [c]))[0]!;
}

/** Row counts a refused call must leave alone (auto-link and auto-summary jobs run in the background, so their rows are left out). */
export async function writeCounts(tenantId: string): Promise<Record<string, number>> {
  const row = await (await tenantDb(tenantId))
    .prepare(
      `SELECT
       (SELECT COUNT(*) FROM items WHERE tenant_id = ?1) AS items,
       (SELECT COUNT(*) FROM items WHERE tenant_id = ?1 AND tier = 'stashed') AS stashed,
       (SELECT COUNT(*) FROM items WHERE tenant_id = ?1 AND pinned) AS pinned,
       (SELECT COUNT(*) FROM chunks WHERE tenant_id = ?1) AS chunks,
       (SELECT COUNT(*) FROM conversations WHERE tenant_id = ?1) AS conversations,
       (SELECT COALESCE(SUM(message_count), 0) FROM conversations WHERE tenant_id = ?1) AS messages,
       (SELECT COUNT(*) FROM links WHERE tenant_id = ?1 AND relationship_type NOT IN ('similar', 'similar_content')) AS links,
       (SELECT COUNT(*) FROM project_tasks WHERE tenant_id = ?1) AS tasks`,
    )
    .bind(tenantId)
    .first<Record<string, number>>();
  return row!;
}

export function countsDiff(before: Record<string, number>, after: Record<string, number>): string {
  return Object.keys(before)
    .filter((k) => before[k] !== after[k])
    .map((k) => `${k} ${before[k]}->${after[k]}`)
    .join(", ");
}

/** A short, readable rendering of an argument value for failure messages. */
export function show(value: unknown, max = 90): string {
  const text =
    JSON.stringify(value, (_k, v) =>
      typeof v === "string" && v.length > 40 ? `${v.slice(0, 12)}…(${v.length} chars)` : v,
    ) ?? String(value);
  return text.length > max ? `${text.slice(0, max)}…` : text;
}

/** The schema's accepted JSON types ("integer" is a number; no type = anything). */
export function acceptedTypes(schema: JsonSchema): Set<string> {
  if (schema.anyOf) return new Set(schema.anyOf.flatMap((s) => [...acceptedTypes(s)]));
  if (schema.enum) return new Set(schema.enum.map((v) => (v === null ? "null" : typeof v)));
  const types =
    schema.type === undefined
      ? ["string", "number", "boolean", "null", "array", "object"]
      : Array.isArray(schema.type)
        ? schema.type
        : [schema.type];
  return new Set(types.map((t) => (t === "integer" ? "number" : t)));
}

/** The first non-null branch of a union, or the schema itself. */
export function mainBranch(schema: JsonSchema): JsonSchema {
  return schema.anyOf?.find((s) => s.type !== "null") ?? schema;
}

/** Names that carry a project in the seeds' vocabularies. */
export const PROJECT_NAMES = ["project", "project_id", "namespace"];

/** The smallest valid value a schema accepts, before any name-based hint. */
export function exampleValue(
  schema: JsonSchema,
  hint: (name: string, schema: JsonSchema) => unknown = () => undefined,
): unknown {
  const s = mainBranch(schema);
  if (s.enum) return s.enum[0];
  const type = Array.isArray(s.type) ? s.type[0] : s.type;
  switch (type) {
    case "string":
      return "fz".padEnd(s.minLength ?? 1, "z");
    case "integer":
    case "number":
      return (s.default as number | undefined) ?? s.minimum ?? 1;
    case "boolean":
      return (s.default as boolean | undefined) ?? false;
    case "array":
      return (s.minItems ?? 0) > 0 && s.items ? [exampleValue(s.items, hint)] : [];
    case "object":
      return exampleObject(s, hint);
    default:
      return "fz";
  }
}

/** Required properties (and any a hint knows a value for), each at an example value. */
export function exampleObject(
  schema: JsonSchema,
  hint: (name: string, schema: JsonSchema) => unknown = () => undefined,
): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [name, prop] of Object.entries(schema.properties ?? {})) {
    const hinted = hint(name, prop);
    if (hinted !== undefined) out[name] = hinted;
    else if (schema.required?.includes(name)) out[name] = exampleValue(prop, hint);
  }
  return out;
}
