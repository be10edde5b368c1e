import { type MCPServer, mcpToFunctionTool, RunContext } from "@openai/agents";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { sample } from "../../scripts/schema-sample.mjs";
import { listedTool } from "../../src/mcp/tool-schemas";
import { TOOLS } from "../../src/tools/index";

// OpenAI's strict mode, decided by OpenAI's own SDK: @openai/agents turns each MCP tool into a function tool with
// mcpToFunctionTool(tool, server, convertSchemasToStrict), what an Agent does with
// `new MCPServerStreamableHttp({ ..., convertSchemasToStrict: true })`. A schema it can make strict becomes a
// `strict: true` tool (every property required, optional ones as nullable, additionalProperties: false, and the
// model's nulls for unset optional properties removed before the call); one it cannot falls back to `strict: false`
// for the whole tool. Run on the input schemas tools/list serves (listedTool). docs/frameworks.md lists these.

/**
 * The tools strict mode cannot take, each with the properties that stop it. Every one is an object whose keys the
 * caller chooses, which strict mode cannot express (each object must list every key and set
 * additionalProperties: false), so closing it would refuse inputs the seed contract accepts:
 * - metadata: a free-form map of string keys to any JSON value, which the seeds' store tools take as given and
 *   memory_get gives back;
 * - context_descriptors: the platform's own payload (seed 004), an object or its JSON string, whose objects carry
 *   extra keys at every level that the server accepts and ignores;
 * - subject_aliases: alias to subject, names the caller chooses ({"Mel": "Melanie"}, issue 60's own shape).
 */
const NOT_STRICT: Record<string, string[]> = {
  memory_store: ["metadata"],
  memory_batch_store: ["memories[].metadata"],
  store_memory: ["metadata"],
  log_chat: ["metadata"],
  memory_ingest_document: ["metadata"],
  memory_settings: ["subject_aliases"],
  context_analyze_usage: ["context_descriptors"],
  context_gc_analyze: ["context_descriptors"],
};

type Schema = Record<string, any>;

let captured: Record<string, unknown> | undefined;
const server = {
  name: "context-edge",
  callTool: async (_name: string, args: Record<string, unknown>) => {
    captured = args;
    return [{ type: "text", text: "{}" }];
  },
} as unknown as MCPServer;

function convert(name: string, inputSchema: Schema) {
  return mcpToFunctionTool(
    { name, description: "", inputSchema } as Parameters<typeof mcpToFunctionTool>[0],
    server,
    true,
  );
}

/**
 * The properties (as `a`, `a[].b`) under which the schema has an open object: type object without
 * additionalProperties: false (a map, or named properties plus typed extra keys).
 */
function openObjects(schema: Schema, path = "", found = new Set<string>()): Set<string> {
  if (schema.type === "object" && schema.additionalProperties !== false) found.add(path.split(/(?<=\w)(?=[|{])/)[0]!);
  for (const [key, value] of Object.entries<Schema>(schema.properties ?? {}))
    openObjects(value, path ? `${path}.${key}` : key, found);
  if (schema.items) openObjects(schema.items, `${path}[]`, found);
  for (const branch of schema.anyOf ?? []) openObjects(branch, `${path}|`, found);
  if (typeof schema.additionalProperties === "object") openObjects(schema.additionalProperties, `${path}{}`, found);
  return found;
}

/** The schema without the property at `path` (`a` or `a[].b`). */
function without(schema: Schema, path: string): Schema {
  const copy = structuredClone(schema);
  const parts = path.split(".");
  let node = copy;
  for (const part of parts.slice(0, -1))
    node = part.endsWith("[]") ? node.properties[part.slice(0, -2)].items : node.properties[part];
  delete node.properties[parts.at(-1)!];
  if (Array.isArray(node.required)) node.required = node.required.filter((r: string) => r !== parts.at(-1));
  return copy;
}

/** What OpenAI's strict mode requires of every object in the converted parameters. */
function strictProblems(schema: Schema, path: string, problems: string[]): string[] {
  if (schema.type === "object") {
    if (schema.additionalProperties !== false) problems.push(`${path}: additionalProperties is not false`);
    const keys = Object.keys(schema.properties ?? {}).sort();
    if (JSON.stringify([...(schema.required ?? [])].sort()) !== JSON.stringify(keys))
      problems.push(`${path}: not every property is required`);
  }
  for (const [key, value] of Object.entries<Schema>(schema.properties ?? {}))
    strictProblems(value, `${path}.${key}`, problems);
  if (schema.items) strictProblems(schema.items, `${path}[]`, problems);
  (schema.anyOf ?? []).forEach((branch: Schema, i: number) => strictProblems(branch, `${path}|${i}`, problems));
  return problems;
}

describe("OpenAI strict mode (@openai/agents' own conversion of each tool's input schema)", () => {
  const tools = TOOLS.map(listedTool);
  // The SDK warns "Error converting MCP schema to strict mode" on each fallback; the first case names them.
  beforeAll(() => void vi.spyOn(console, "warn").mockImplementation(() => undefined));
  afterAll(() => vi.restoreAllMocks());

  it("takes every tool but those with caller-keyed objects, each for exactly those properties", () => {
    const notStrict = Object.fromEntries(
      tools
        .filter((tool) => !convert(tool.name, tool.inputSchema).strict)
        .map((tool) => [tool.name, [...openObjects(tool.inputSchema)].sort()]),
    );
    expect(notStrict).toEqual(NOT_STRICT);
    // Those properties are the only obstacle: without them the SDK makes the tool strict.
    for (const [name, paths] of Object.entries(NOT_STRICT)) {
      const schema = paths.reduce(without, tools.find((t) => t.name === name)!.inputSchema);
      expect(convert(name, schema).strict, name).toBe(true);
    }
  });

  it("gives each strict tool closed objects with every property required", () => {
    const problems = tools
      .map((tool) => convert(tool.name, tool.inputSchema))
      .filter((tool) => tool.strict)
      .flatMap((tool) => strictProblems(tool.parameters as Schema, tool.name, []));
    expect(problems).toEqual([]);
  });

  it("hands the server, for a strict call with every optional property null, arguments its own schema accepts", async () => {
    const refused: string[] = [];
    for (const [i, tool] of tools.entries()) {
      const converted = convert(tool.name, tool.inputSchema);
      if (!converted.strict) continue;
      // What a model sends in strict mode: every property, null for those it leaves unset.
      const required = new Set<string>(tool.inputSchema.required as string[] | undefined);
      const properties = (converted.parameters as Schema).properties as Record<string, Schema>;
      const args = Object.fromEntries(
        Object.keys(properties).map((key) => [
          key,
          required.has(key) ? sample((tool.inputSchema as Schema).properties[key]) : null,
        ]),
      );
      captured = undefined;
      await converted.invoke(new RunContext(), JSON.stringify(args), {
        toolCall: { type: "function_call", callId: `call-${i}`, name: tool.name, arguments: "" },
      });
      const parsed = TOOLS[i]!.input.safeParse(captured);
      if (!parsed.success) refused.push(`${tool.name}: ${JSON.stringify(captured)}: ${parsed.error.message}`);
    }
    expect(refused).toEqual([]);
    // The search the recipes make, as strict mode sends it: the unset options do not reach the server.
    const search = convert("search", tools.find((t) => t.name === "search")!.inputSchema);
    const all = Object.fromEntries(Object.keys((search.parameters as Schema).properties).map((key) => [key, null]));
    await search.invoke(new RunContext(), JSON.stringify({ ...all, query: "lighthouse", limit: 3 }), {
      toolCall: { type: "function_call", callId: "call-search", name: "search", arguments: "" },
    });
    expect(captured).toEqual({ query: "lighthouse", limit: 3 });
  });
});
