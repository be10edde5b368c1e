import { beforeAll, describe, expect, it } from "vitest";
import { call, newTenant, type TestTenant, tenantDb, untilLogged } from "./helpers";
import {
  type JsonSchema,
  KeyPool,
  listTools,
  mainBranch,
  type Outcome,
  PROJECT_NAMES,
  runCalls,
  show,
  type ToolCall,
  type ToolInfo,
} from "./registry-cases";

// Every tool once at its schema maximums (issue 9, defect 4): longest lists, largest limits and depths,
// longest strings, with enough data that result lists are long, and once more through a key limited to
// 100 projects. D1 binds at most 100 parameters a statement: no call may fail with -32603 /
// INTERNAL_ERROR, and "too many SQL variables" must never appear.

const WORD = "maxword";
const MEMORIES = 120;
const CONVERSATIONS = 101; // get_tool_conversations {limit: 100} must have more than 100 to list
const CONVERSATION_MESSAGES = 120;
const MAX_BODY_STRING = 100_000; // keeps every request under the 1 MiB body limit
const RESOURCE_TYPES = [
  "related_to",
  "depends_on",
  "references",
  "implements",
  "extends",
  "part_of",
  "supersedes",
  "contradicts",
  "derived_from",
  "example_of",
];

interface Data {
  memories: string[];
  messageId: string;
  chunks: number[];
}

function words(length: number): string {
  return `${WORD} lorem ipsum dolor sit amet `.repeat(Math.ceil(length / 33)).slice(0, length);
}

async function chunkIds(tenantId: string): Promise<number[]> {
  return (
    await (
      await tenantDb(tenantId)
    )
      .prepare("SELECT id FROM chunks WHERE tenant_id = ? ORDER BY id LIMIT 1000")
      .bind(tenantId)
      .all<{ id: number }>()
  ).results.map((r) => r.id);
}

/** 120 memories linked in a web, a conversation of 120 messages, 101 more conversations (20 related to it). */
async function seed(t: TestTenant): Promise<Data> {
  // Every scope, so each tool's maxima are reached past its scope check (memory_reextract needs admin).
  const keys = new KeyPool(t.tenantId, { scopes: ["read", "write", "admin"] });
  const memories: string[] = [];
  for (let start = 0; start < MEMORIES; start += 60) {
    const batch = Array.from({ length: 60 }, (_, i) => ({
      content: `${WORD} memory ${start + i} about topic ${(start + i) % 7}`,
      tags: [`t${i % 5}`],
    }));
    memories.push(...(await call(await keys.take(), "memory_batch_store", { namespace: "p0", memories: batch })).ids);
  }
  const messages: ToolCall[] = [
    ...Array.from({ length: CONVERSATION_MESSAGES }, (_, i) => ({
      name: "log_chat",
      args: {
        conversation_id: "max-conv",
        role: i % 2 ? "assistant" : "user",
        content: `${WORD} message ${i}`,
        project_id: "p0",
      },
    })),
    ...Array.from({ length: CONVERSATIONS }, (_, i) => ({
      name: "log_chat",
      args: { conversation_id: `conv-${i}`, role: "user", content: `${WORD} opening ${i}`, project_id: `p${i % 100}` },
    })),
  ];
  const links: ToolCall[] = memories.slice(0, 60).map((id, i) => ({
    name: "link_resources",
    args: {
      source_id: id,
      target_id: memories[(i * 7 + 1) % MEMORIES],
      relationship_type: RESOURCE_TYPES[i % RESOURCE_TYPES.length],
    },
  }));
  const relations: ToolCall[] = Array.from({ length: 20 }, (_, i) => ({
    name: "add_relationship",
    args: { sourceContextId: "max-conv", targetContextId: `conv-${i}`, relationshipType: "references" },
  }));
  const outcomes = await runCalls("jsonrpc", keys, [...messages, ...links, ...relations]);
  const failed = outcomes.filter((o) => o.kind !== "result");
  if (failed.length > 0) throw new Error(`seeding failed: ${failed[0]!.message}`);
  const first = outcomes[0]!.value as { message_id: string };
  await untilLogged(t.tenantId, outcomes.length); // the usage log (get_tool_conversations) is written by the USAGE queue
  // Keyword search finds every record at once; embeddings follow in the background (waiting for them would only add time).
  return { memories, messageId: first.message_id, chunks: await chunkIds(t.tenantId) };
}

/** Values that make each list long: real ids, every relationship type, the word every record holds. */
function hint(name: string, d: Data, project: string): unknown {
  if (PROJECT_NAMES.includes(name)) return project;
  if (["contextId", "conversation_id", "session_id", "sourceContextId"].includes(name)) return "max-conv";
  if (name === "targetContextId") return "conv-1";
  if (name === "message_id") return d.messageId;
  if (name === "source_id" || name === "document_id") return d.memories[0];
  if (name === "target_id") return d.memories[1];
  if (name === "chunk_id") return d.chunks[0];
  if (name === "chunk_ids") return d.chunks.slice(0, 100);
  if (name === "segment_ids")
    return [...d.memories, ...Array.from({ length: 1000 - d.memories.length }, (_, i) => `seg-missing-${i}`)];
  if (name === "relationship_types")
    return [...RESOURCE_TYPES, "similar_content", "similar", "continues", "parent", "child", "a", "b", "c", "d", "e"];
  if (name === "query" || name === "pattern") return WORD;
  if (name === "tool_name") return "log_chat";
  if (name === "doc_type") return "note";
  if (name === "min_similarity" || name === "similarity_threshold") return 0;
  if (name === "memories")
    return Array.from({ length: 100 }, (_, i) => ({ content: `${WORD} batch ${i}`, tags: ["b"] }));
  if (name === "documents") return Array.from({ length: 200 }, (_, i) => ({ content: words(400), id: i }));
  if (name === "filters") return { tags: Array.from({ length: 50 }, (_, i) => `t${i}`), type: "note" };
  if (name === "context_descriptors") {
    const entries = (kind: string) =>
      Array.from({ length: 200 }, (_, i) => ({ content: `${WORD} ${kind} ${i}`, role: "user" }));
    return {
      recent_messages: entries("recent"),
      segment_summaries: entries("summary"),
      current_file: { path: "src/max.ts", line: 1, content: words(2000) },
      token_usage: { current: 1000, limit: 100_000 },
    };
  }
  return undefined;
}

/** The schema's largest value: max items, max numbers, and (in `lengths` mode) strings at their max length. */
function maxValue(schema: JsonSchema, name: string, lengths: boolean, d: Data, project: string): unknown {
  const hinted = lengths && (name === "query" || name === "pattern") ? undefined : hint(name, d, project);
  if (hinted !== undefined) return hinted;
  const s = mainBranch(schema);
  if (s.enum) return s.enum[0];
  switch (Array.isArray(s.type) ? s.type[0] : s.type) {
    case "string":
      return lengths && s.maxLength !== undefined ? words(Math.min(s.maxLength, MAX_BODY_STRING)) : WORD;
    case "integer":
    case "number":
      return s.maximum !== undefined && s.maximum <= 1e9
        ? s.maximum
        : ((s.default as number | undefined) ?? s.minimum ?? 1);
    case "boolean":
      return (s.default as boolean | undefined) ?? true;
    case "array":
      return Array.from({ length: Math.min(s.maxItems ?? 10, 1000) }, () =>
        s.items ? maxValue(s.items, "", lengths, d, project) : WORD,
      );
    case "object":
      return Object.fromEntries(
        Object.entries(s.properties ?? {}).map(([k, v]) => [k, maxValue(v, k, lengths, d, project)]),
      );
    default:
      return WORD;
  }
}

function argsAtMaxima(
  tool: ToolInfo,
  lengths: boolean,
  d: Data,
  project: string,
  dropOptionalProjects = false,
): Record<string, unknown> {
  const args: Record<string, unknown> = {};
  for (const [name, prop] of Object.entries(tool.schema.properties ?? {})) {
    if (dropOptionalProjects && PROJECT_NAMES.includes(name) && !tool.schema.required?.includes(name)) continue;
    args[name] = maxValue(prop, name, lengths, d, project);
  }
  return args;
}

function problem(c: ToolCall, o: Outcome, label: string): string | null {
  const where = `${label} ${c.name} ${show(c.args, 200)}`;
  if (/too many SQL variables/i.test(o.text)) return `${where}: "too many SQL variables"`;
  if (o.kind === "internal")
    return `${where}: internal error (HTTP ${o.status}, ${o.code}): ${o.message.slice(0, 120)}`;
  return null;
}

describe("every tool at its schema maximums", () => {
  let tools: ToolInfo[];
  let t: TestTenant;
  let data: Data;
  const tally = { calls: 0, results: 0, refusals: 0 };

  beforeAll(async () => {
    tools = await listTools();
    t = await newTenant();
    data = await seed(t);
    expect(data.chunks.length).toBeGreaterThanOrEqual(100);
  }, 120_000);

  async function runPass(label: string, keys: KeyPool, calls: ToolCall[]): Promise<string[]> {
    const outcomes = await runCalls("jsonrpc", keys, calls, 10);
    tally.calls += calls.length;
    tally.results += outcomes.filter((o) => o.kind === "result").length;
    tally.refusals += outcomes.filter((o) => o.kind === "refused").length;
    return calls.map((c, i) => problem(c, outcomes[i]!, label)).filter((p): p is string => p !== null);
  }

  it("a key limited to 100 projects, calling every tool without naming a project where it may", async () => {
    const projects = Array.from({ length: 100 }, (_, i) => `p${i}`);
    const calls = tools.map((tool) => ({ name: tool.name, args: argsAtMaxima(tool, false, data, "p0", true) }));
    calls.push({ name: "visualize_context", args: {} }, { name: "search", args: { query: WORD } });
    expect(await runPass("100-project key", new KeyPool(t.tenantId, { projects }), calls)).toEqual([]);
  }, 90_000);
  it("every string at its max length", async () => {
    const calls = tools.map((tool) => ({ name: tool.name, args: argsAtMaxima(tool, true, data, "p0") }));
    expect(await runPass("lengths", new KeyPool(t.tenantId), calls)).toEqual([]);
  }, 90_000);

  it("longest lists, largest limits and depths (unrestricted key; last: it stashes and prunes)", async () => {
    const calls = tools.map((tool) => ({ name: tool.name, args: argsAtMaxima(tool, false, data, "p0") }));
    const failures = await runPass("lists", new KeyPool(t.tenantId), calls);
    console.log(
      `maxima: ${tally.calls} calls over ${tools.length} tools: ${tally.results} results, ${tally.refusals} refusals`,
    );
    expect(failures).toEqual([]);
  }, 90_000);
});
