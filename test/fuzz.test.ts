import { beforeAll, describe, expect, it } from "vitest";
import { call, jsonrpc, mcpPost, newKey, newTenant, type TestTenant } from "./helpers";
import {
  acceptedTypes,
  countsDiff,
  type Endpoint,
  exampleObject,
  exampleValue,
  type JsonSchema,
  KeyPool,
  listTools,
  mainBranch,
  mcpCall,
  mcpOutcome,
  type Outcome,
  PROJECT_NAMES,
  runCalls,
  runOne,
  show,
  type ToolInfo,
  writeCounts,
} from "./registry-cases";

// Registry-driven fuzz (issue 9): for every tool in tools/list, malformed values per field derived from
// its input schema, over /jsonrpc and /mcp. Pass = a clear error or a valid result, never -32603 /
// INTERNAL_ERROR / HTTP 5xx, and nothing written when a call is refused.

type Expect = "refuse" | "either";
interface Case {
  tool: string;
  path: (string | number)[];
  label: string;
  args: Record<string, unknown>;
  expect: Expect;
}

const FTS_AND_SQL = ['"a" OR NEAR(b', "*", "^", "'; DROP TABLE items; --"];
const SPECIAL_STRINGS = ["fz\u0000fz", "fz\ud800", ...FTS_AND_SQL];
const BIG_NUMBERS = [1e308, -1e308, 8.64e15 + 1];
const WRONG_TYPES: [string, unknown][] = [
  ["string", "fz"],
  ["number", 7],
  ["boolean", true],
  ["null", null],
  ["array", ["fz"]],
  ["object", { fz: 1 }],
];
const POISONED_OBJECTS = [
  { created_after: 1e308 },
  { created_before: -1e308 },
  { created_after: 8.64e15 + 1 },
  { recent_messages: [{ content: "fz poisoned", timestamp: 1e308 }] },
  { recent_messages: [{ content: "fz poisoned", timestamp: -1e308 }] },
];
/** Free-text fields get every special string; other strings a rotating share of them. */
const TEXT_FIELDS = new Set([
  "query",
  "content",
  "message",
  "pattern",
  "project",
  "project_id",
  "namespace",
  "file_name",
  "tool_name",
]);
const CONVERSATION_NAMES = ["contextId", "conversation_id", "session_id", "sourceContextId", "targetContextId"];
const MAX_STRING_SENT = 200_001; // bodies stay under the 1 MiB request limit

interface Seed {
  memoryId: string;
  documentId: string;
  messageId: string;
  chunkId: number;
}

function hintFor(seed: Seed) {
  return (name: string): unknown => {
    if (PROJECT_NAMES.includes(name)) return "fz";
    if (name === "targetContextId") return "fz-conv-2";
    if (CONVERSATION_NAMES.includes(name)) return "fz-conv";
    if (name === "message_id") return seed.messageId;
    if (name === "source_id" || name === "document_id") return seed.memoryId;
    if (name === "target_id") return seed.documentId;
    if (name === "chunk_id") return seed.chunkId;
    if (name === "chunk_ids") return [seed.chunkId];
    if (name === "segment_ids") return [seed.memoryId];
    if (name === "query" || name === "pattern") return "fuzz";
    if (name === "doc_type") return "note";
    if (name === "tool_name") return "log_chat";
    return undefined;
  };
}

function withValue(
  base: Record<string, unknown>,
  path: (string | number)[],
  value: unknown,
  remove = false,
): Record<string, unknown> {
  const copy = structuredClone(base);
  let node: any = copy;
  for (const key of path.slice(0, -1)) node = node[key];
  const last = path[path.length - 1]!;
  if (remove) delete node[last];
  else node[last] = value;
  return copy;
}

/** Text of exactly `length` characters in short words (a single long run would only time the tokenizer). */
function wordsOfLength(length: number): string {
  return "fz lorem ipsum dolor sit amet ".repeat(Math.ceil(length / 30)).slice(0, length);
}

function nest(depth: number, leaf: unknown, wrap: (inner: unknown) => unknown): unknown {
  let value = leaf;
  for (let i = 0; i < depth; i++) value = wrap(value);
  return value;
}

/** Values for one field: [label, value, expectation]. `rotation` spreads the cheap variants over a tool's fields. */
function fieldValues(
  name: string,
  schema: JsonSchema,
  rotation: number,
  example: unknown,
): [string, unknown, Expect][] {
  const out: [string, unknown, Expect][] = [];
  const accepted = acceptedTypes(schema);
  const wrong = WRONG_TYPES.filter(([type]) => !accepted.has(type));
  for (let i = 0; i < Math.min(2, wrong.length); i++) {
    const [type, value] = wrong[(rotation + i) % wrong.length]!;
    out.push([`wrong type ${type}`, value, "refuse"]);
  }
  const s = mainBranch(schema);
  const stringOrNumber = accepted.has("string") && accepted.has("number"); // timestamps, ids
  if (s.enum) out.push(["not in enum", "not_a_member", "refuse"]);
  else if (accepted.has("string")) stringValues(name, s, rotation, out);
  if (!stringOrNumber && (s.type === "integer" || s.type === "number")) numberValues(s, out);
  if (stringOrNumber) {
    for (const n of BIG_NUMBERS) out.push([`time ${n}`, n, "either"]);
    out.push(["time not a date", "yesterday-ish", "either"]);
  }
  if (s.type === "array") arrayValues(s, example, out);
  if (accepted.has("object")) objectValues(accepted.has("string"), out);
  return out;
}

function stringValues(name: string, s: JsonSchema, rotation: number, out: [string, unknown, Expect][]): void {
  if ((s.minLength ?? 0) >= 1) out.push(["empty string below minLength", "", "refuse"]);
  if (s.maxLength !== undefined && s.maxLength + 1 <= MAX_STRING_SENT) {
    out.push([`length max+1 (${s.maxLength + 1})`, "x".repeat(s.maxLength + 1), "refuse"]);
    out.push([`length at max (${s.maxLength})`, wordsOfLength(s.maxLength), "either"]);
  }
  const specials = TEXT_FIELDS.has(name) ? SPECIAL_STRINGS : [SPECIAL_STRINGS[rotation % SPECIAL_STRINGS.length]!];
  for (const value of specials) out.push([`special ${show(value)}`, value, "either"]);
}

function numberValues(s: JsonSchema, out: [string, unknown, Expect][]): void {
  if (s.minimum !== undefined) out.push([`below min (${s.minimum - 1})`, s.minimum - 1, "refuse"]);
  if (s.maximum !== undefined && s.maximum < Number.MAX_SAFE_INTEGER) {
    out.push([`above max (${s.maximum + 1})`, s.maximum + 1, "refuse"]);
    out.push([`at max (${s.maximum})`, s.maximum, "either"]);
  }
  if (s.type === "integer") out.push(["fraction for integer", 1.5, "refuse"]);
  const bounded = s.maximum !== undefined && s.minimum !== undefined;
  for (const n of bounded ? [1e308] : BIG_NUMBERS) {
    const outside = (s.maximum !== undefined && n > s.maximum) || (s.minimum !== undefined && n < s.minimum);
    out.push([`number ${n}`, n, outside ? "refuse" : "either"]);
  }
}

function arrayValues(s: JsonSchema, example: unknown, out: [string, unknown, Expect][]): void {
  const item = Array.isArray(example) && example.length > 0 ? example[0] : s.items ? exampleValue(s.items) : "fz";
  if ((s.minItems ?? 0) >= 1) out.push(["empty array below minItems", [], "refuse"]);
  if (s.maxItems !== undefined) {
    out.push([`items max+1 (${s.maxItems + 1})`, Array.from({ length: s.maxItems + 1 }, () => item), "refuse"]);
    out.push([`items at max (${s.maxItems})`, Array.from({ length: s.maxItems }, () => item), "either"]);
  }
  if (s.items) {
    const itemTypes = acceptedTypes(s.items);
    out.push(["null item", [null], itemTypes.has("null") ? "either" : "refuse"]);
    out.push(["deeply nested array", nest(64, ["fz"], (v) => [v]), itemTypes.has("array") ? "either" : "refuse"]);
  }
}

function objectValues(stringToo: boolean, out: [string, unknown, Expect][]): void {
  out.push(["deeply nested object", nest(64, "fz", (v) => ({ a: v })), "either"]);
  for (const poison of POISONED_OBJECTS) out.push([`poisoned ${show(poison)}`, poison, "either"]);
  if (stringToo)
    out.push([`poisoned JSON string ${show(POISONED_OBJECTS[0])}`, JSON.stringify(POISONED_OBJECTS[0]), "either"]);
}

/** Every case of one tool: a valid baseline, an unknown argument, then one malformed field at a time. */
function casesFor(tool: ToolInfo, seed: Seed): Case[] {
  const hint = hintFor(seed);
  const base = exampleObject(tool.schema, hint);
  const cases: Case[] = [{ tool: tool.name, path: [], label: "valid baseline", args: base, expect: "either" }];
  cases.push({
    tool: tool.name,
    path: ["namespce"],
    label: "unknown argument (misspelt namespace)",
    args: { ...base, namespce: "fz" },
    expect: "refuse",
  });
  let rotation = 0;
  const visit = (schema: JsonSchema, prefix: (string | number)[], holder: Record<string, unknown>) => {
    for (const [name, prop] of Object.entries(schema.properties ?? {})) {
      const path = [...prefix, name];
      const required = schema.required?.includes(name) ?? false;
      if (required)
        cases.push({
          tool: tool.name,
          path,
          label: "missing required",
          args: withValue(base, path, undefined, true),
          expect: "refuse",
        });
      const example = holder[name] ?? exampleValue(prop, hint);
      const parent = prefix.length === 0 ? base : withValue(base, path, example);
      for (const [label, value, expectation] of fieldValues(name, prop, rotation++, example)) {
        cases.push({ tool: tool.name, path, label, args: withValue(parent, path, value), expect: expectation });
      }
      const items = mainBranch(prop).items;
      if (prefix.length === 0 && items?.properties) {
        const first = Array.isArray(base[name]) ? (base[name] as Record<string, unknown>[])[0] : undefined;
        const nestedBase = first ?? (exampleValue(items, hint) as Record<string, unknown>);
        const before = cases.length;
        visit(items, [name, 0], nestedBase);
        for (const c of cases.slice(before))
          if (!Array.isArray(base[name])) c.args = withValue(c.args, [name], [nestedBase]);
      }
    }
  };
  visit(tool.schema, [], base);
  return cases;
}

function judge(endpoint: Endpoint, c: Case, o: Outcome): string | null {
  const where = `${endpoint} ${c.tool} ${c.path.join(".") || "(args)"} [${c.label}]`;
  if (o.kind === "internal")
    return `${where}: internal error (HTTP ${o.status}, code ${o.code ?? "-"}): ${o.message.slice(0, 160)}`;
  if (c.expect === "either") return null;
  if (o.kind === "result") return `${where}: accepted a value the schema forbids (valid result returned)`;
  const invalid = o.code === -32602 || o.appCode === "INVALID_PARAMETER";
  if (!invalid)
    return `${where}: refused with ${o.appCode ?? o.code}, expected INVALID_PARAMETER / -32602: ${o.message.slice(0, 120)}`;
  const field = String(c.path[0]);
  if (!o.message.includes(field))
    return `${where}: error does not name the parameter '${field}': ${o.message.slice(0, 120)}`;
  return null;
}

interface Tally {
  cases: number;
  refusals: number;
  results: number;
  internal: number;
}

/** Runs one tool's cases over one endpoint; refused calls must not change the tenant's rows. */
async function fuzzTool(
  endpoint: Endpoint,
  tool: ToolInfo,
  cases: Case[],
  keys: KeyPool,
  tally: Tally,
  failures: string[],
): Promise<void> {
  const record = (c: Case, o: Outcome) => {
    tally.cases++;
    if (o.kind === "internal") tally.internal++;
    else if (o.kind === "refused") tally.refusals++;
    else tally.results++;
    const failure = judge(endpoint, c, o);
    if (failure) failures.push(failure);
  };
  const grouped = async (group: Case[], note: string) => {
    if (group.length === 0) return;
    const before = await writeCounts(keys.tenantId);
    const outcomes = await runCalls(
      endpoint,
      keys,
      group.map((c) => ({ name: c.tool, args: c.args })),
    );
    group.forEach((c, i) => record(c, outcomes[i]!));
    const diff = countsDiff(before, await writeCounts(keys.tenantId));
    const accepted = group
      .filter((_, i) => outcomes[i]!.kind === "result")
      .map((c) => `${c.path.join(".")} [${c.label}]`);
    if (diff)
      failures.push(
        `${endpoint} ${tool.name}: ${note} changed rows (${diff})${accepted.length ? `; accepted: ${accepted.join("; ")}` : ""}`,
      );
  };
  // Write tools run one call at a time where a result is possible (or likely today: the unknown argument),
  // so a row change is pinned on the one call that made it.
  const alone = (c: Case) => !tool.readOnly && (c.expect === "either" || c.label.startsWith("unknown argument"));
  const refusing = cases.filter((c) => !alone(c) && c.expect === "refuse");
  const either = cases.filter((c) => c.expect === "either" || alone(c));
  await grouped(refusing, `${refusing.length} calls that must all be refused`);
  if (tool.readOnly) return grouped(either, "read-only calls");
  if (endpoint === "mcp") return mcpWrites(either, keys, record, failures);
  let counts = await writeCounts(keys.tenantId);
  for (const c of either) {
    const o = await runOne(endpoint, keys, { name: c.tool, args: c.args });
    record(c, o);
    const after = await writeCounts(keys.tenantId);
    const diff = o.kind === "result" ? "" : countsDiff(counts, after);
    if (diff)
      failures.push(
        `${endpoint} ${c.tool} ${c.path.join(".") || "(args)"} [${c.label}]: refused (${o.appCode ?? o.code}) but rows changed (${diff})`,
      );
    counts = after;
  }
}

/**
 * Both endpoints share one dispatch, so /mcp (one HTTP request a call, about twice the cost) gets every
 * tool and every field but not every value: per field its first refusal and one other value, rotating;
 * /jsonrpc gets them all. Set MCP_EVERY_CASE to send /mcp the whole matrix.
 */
const MCP_EVERY_CASE = false;

function mcpShare(cases: Case[]): Case[] {
  if (MCP_EVERY_CASE) return cases;
  const byField = new Map<string, Case[]>();
  for (const c of cases) byField.set(c.path.join("."), [...(byField.get(c.path.join(".")) ?? []), c]);
  return [...byField.values()].flatMap((group, i) => {
    const refusal = group.find((c) => c.expect === "refuse");
    const others = group.filter((c) => c !== refusal);
    return [...(refusal ? [refusal] : []), ...(others.length > 0 ? [others[i % others.length]!] : [])];
  });
}

/**
 * /mcp runs cases that /jsonrpc also runs (and there checks every refused write call alone), a few requests in
 * flight: a group in which every call was refused must leave the rows alone.
 */
async function mcpWrites(
  cases: Case[],
  keys: KeyPool,
  record: (c: Case, o: Outcome) => void,
  failures: string[],
): Promise<void> {
  for (let i = 0; i < cases.length; i += 4) {
    const group = cases.slice(i, i + 4);
    const before = await writeCounts(keys.tenantId);
    const outcomes = await runCalls(
      "mcp",
      keys,
      group.map((c) => ({ name: c.tool, args: c.args })),
    );
    group.forEach((c, j) => record(c, outcomes[j]!));
    if (outcomes.some((o) => o.kind === "result")) continue;
    const diff = countsDiff(before, await writeCounts(keys.tenantId));
    if (diff)
      failures.push(
        `mcp ${group[0]!.tool}: refused calls changed rows (${diff}): ${group.map((c) => `${c.path.join(".")} [${c.label}]`).join("; ")}`,
      );
  }
}

async function seedTenant(t: TestTenant): Promise<Seed> {
  const memory = await call(t.apiKey, "memory_store", {
    content: "fuzz seed memory about the alpha deploy",
    namespace: "fz",
  });
  const doc = await call(t.apiKey, "store_memory", {
    file_name: "fz.md",
    content: "fuzz seed document about the beta release",
    project_id: "fz",
  });
  const message = await call(t.apiKey, "log_chat", {
    conversation_id: "fz-conv",
    role: "user",
    content: "fuzz seed message about gamma",
    project_id: "fz",
  });
  await call(t.apiKey, "log_chat", {
    conversation_id: "fz-conv-2",
    role: "user",
    content: "fuzz seed message about delta",
    project_id: "fz",
  });
  const hits = await call(t.apiKey, "search", { query: "fuzz seed", project: "fz" });
  return {
    memoryId: memory.id,
    documentId: doc.resource_id,
    messageId: message.message_id,
    chunkId: hits.results[0].chunk_id,
  };
}

describe("registry-driven fuzz", () => {
  let tools: ToolInfo[];
  let tenant: TestTenant;
  let seed: Seed;
  /** Every scope, so each tool is fuzzed past its scope check (memory_reextract needs admin). */
  const EVERY_SCOPE = { scopes: ["read", "write", "admin"] };
  const failures: Record<Endpoint, string[]> = { jsonrpc: [], mcp: [] };

  beforeAll(async () => {
    tools = await listTools();
    tenant = await newTenant();
    seed = await seedTenant(tenant);
  });

  it("/mcp is stateless: tools/call works without initialize (else the /mcp fuzz below would prove nothing)", async () => {
    const o = await mcpCall((await newKey(tenant.tenantId)).apiKey, "ping", {});
    expect({ kind: o.kind, value: o.value }, o.text).toEqual({ kind: "result", value: { result: "pong" } });
  });

  for (const endpoint of ["jsonrpc", "mcp"] as const) {
    it(`every tool, every field, over /${endpoint}: a clear error or a valid result, nothing written on refusal`, async () => {
      expect(tools.length).toBeGreaterThan(40);
      const keys = new KeyPool(tenant.tenantId, EVERY_SCOPE);
      const tally: Tally = { cases: 0, refusals: 0, results: 0, internal: 0 };
      for (const tool of tools) {
        const cases = casesFor(tool, seed);
        await fuzzTool(
          endpoint,
          tool,
          endpoint === "jsonrpc" ? cases : mcpShare(cases),
          keys,
          tally,
          failures[endpoint],
        );
      }
      console.log(
        `fuzz /${endpoint}: ${tally.cases} cases over ${tools.length} tools: ${tally.refusals} refusals, ${tally.results} valid results, ${tally.internal} internal errors, ${failures[endpoint].length} failures`,
      );
      expect(failures[endpoint]).toEqual([]);
    }, 240_000);
  }

  it("after the fuzz, search, the working set, the stash and every conversation still read on every fuzzed project", async () => {
    const projects = (
      await tenant.db
        .prepare(
          "SELECT DISTINCT project FROM items WHERE tenant_id = ?1 UNION SELECT project FROM conversations WHERE tenant_id = ?1 ORDER BY 1 LIMIT 40",
        )
        .bind(tenant.tenantId)
        .all<{ project: string }>()
    ).results.map((r) => r.project);
    expect(projects).toContain("fz");
    const keys = new KeyPool(tenant.tenantId, EVERY_SCOPE);
    const conversations = (
      await tenant.db
        .prepare("SELECT id FROM conversations WHERE tenant_id = ? ORDER BY id LIMIT 20")
        .bind(tenant.tenantId)
        .all<{ id: string }>()
    ).results;
    const calls = [
      { name: "search", args: { query: "fuzz" } },
      ...projects.flatMap((p) => [
        { name: "search", args: { query: "fz", project: p, include_stashed: true } },
        { name: "search", args: { query: "fuzz", project: p, include_stashed: true } },
        { name: "context_get_working_set", args: { project_id: p } },
        { name: "context_search_stashed", args: { project_id: p } },
      ]),
      ...conversations.map((c) => ({ name: "retrieve_context", args: { contextId: c.id } })),
    ];
    const outcomes = await runCalls("jsonrpc", keys, calls);
    const broken = calls
      .map((c, i) => [c, outcomes[i]!] as const)
      .filter(([, o]) => o.kind !== "result")
      .map(([c, o]) => `${c.name} ${show(c.args)}: ${o.code} ${o.message.slice(0, 100)}`);
    expect(broken, "reads on fuzzed projects must keep working").toEqual([]);
  });

  it("answers a malformed tools/call envelope with -32602 on both endpoints, never -32603", async () => {
    const envelopes: [string, unknown][] = [
      ["arguments []", { name: "ping", arguments: [] }],
      ['arguments "s"', { name: "ping", arguments: "s" }],
      ["arguments null", { name: "ping", arguments: null }],
      ["no name", { arguments: {} }],
      ["name 5", { name: 5, arguments: {} }],
      ["params missing", undefined],
    ];
    const keys = new KeyPool(tenant.tenantId, EVERY_SCOPE);
    const wrong: string[] = [];
    for (const [label, params] of envelopes) {
      const body = { jsonrpc: "2.0", id: 1, method: "tools/call", ...(params === undefined ? {} : { params }) };
      const viaRpc = await (await jsonrpc(await keys.take(), body)).json<any>();
      const viaMcp = await mcpOutcome(await mcpPost(await keys.take(), body, { query: "?toolsets=all" }));
      if (viaRpc.error?.code !== -32602) wrong.push(`jsonrpc ${label}: ${JSON.stringify(viaRpc).slice(0, 160)}`);
      const mcpClear = viaMcp.code === -32602 || viaMcp.appCode === "INVALID_PARAMETER";
      if (!mcpClear) wrong.push(`mcp ${label}: ${viaMcp.kind} ${viaMcp.code} ${viaMcp.message.slice(0, 160)}`);
    }
    expect(wrong).toEqual([]);
  });
});
