import { describe, expect, it } from "vitest";
import { TOOLS } from "../src/tools/index";
import { jsonrpc, mcpPost, newTenant } from "./helpers";

// Every schema tools/list shows, on both endpoints, stays in the portable subset that single-type
// dialects (Gemini function declarations, OpenAI function calling) and draft-07 validators accept.

const ANNOTATIONS = new Set([
  "description",
  "title",
  "default",
  "examples",
  "$comment",
  "deprecated",
  "readOnly",
  "writeOnly",
]);
const MAPS = ["properties", "patternProperties", "$defs", "definitions"];
const LISTS = ["anyOf", "oneOf", "allOf", "prefixItems"];
const SLOTS = ["items", "additionalProperties", "not", "contains", "propertyNames", "if", "then", "else"];
/** The platform's own payload (seed 004): extra keys are accepted, so its objects say so with a typed schema. */
const OPEN_OBJECTS = / inputSchema\.properties\.context_descriptors\./;

function lint(schema: unknown, path: string, io: "input" | "output", problems: string[]): void {
  if (typeof schema === "boolean") {
    if (!(schema === false && path.endsWith(".additionalProperties"))) problems.push(`${path}: boolean schema`);
    return;
  }
  if (typeof schema !== "object" || schema === null || Array.isArray(schema)) {
    problems.push(`${path}: not a schema`);
    return;
  }
  const s = schema as Record<string, unknown>;
  const isNotEmpty = path.endsWith(".not") && Object.keys(s).length === 0; // `{not: {}}` is the portable "never"
  if (!isNotEmpty && Object.keys(s).every((k) => ANNOTATIONS.has(k)))
    problems.push(`${path}: empty schema (accepts anything untyped)`);
  if (Array.isArray(s.type)) problems.push(`${path}: type array ${JSON.stringify(s.type)}`);
  if ("prefixItems" in s) problems.push(`${path}: tuple (prefixItems)`);
  // Objects with named properties are strict; a map (metadata) types its values in additionalProperties.
  if (
    io === "input" &&
    s.type === "object" &&
    "properties" in s &&
    s.additionalProperties !== false &&
    !OPEN_OBJECTS.test(path)
  ) {
    problems.push(`${path}: input object without additionalProperties: false`);
  }
  for (const key of MAPS) {
    if (typeof s[key] === "object" && s[key] !== null)
      for (const [k, v] of Object.entries(s[key] as object)) lint(v, `${path}.${key}.${k}`, io, problems);
  }
  for (const key of LISTS)
    if (Array.isArray(s[key])) (s[key] as unknown[]).forEach((v, i) => lint(v, `${path}.${key}[${i}]`, io, problems));
  for (const key of SLOTS) if (key in s) lint(s[key], `${path}.${key}`, io, problems);
}

async function listedTools(endpoint: "/mcp" | "/jsonrpc"): Promise<any[]> {
  const t = await newTenant();
  const list = { jsonrpc: "2.0", id: 1, method: "tools/list" };
  const response =
    endpoint === "/mcp"
      ? await mcpPost(t.apiKey, list, { query: "?toolsets=all" })
      : await jsonrpc(t.apiKey, list, "?toolsets=all");
  return (await response.json<any>()).result.tools;
}

describe("portable tool schemas", () => {
  for (const endpoint of ["/mcp", "/jsonrpc"] as const) {
    it(`${endpoint} tools/list: no boolean, empty or tuple schemas, no type arrays, strict inputs`, async () => {
      const tools = await listedTools(endpoint);
      expect(tools.map((t) => t.name).sort()).toEqual(TOOLS.map((t) => t.name).sort());
      const problems: string[] = [];
      for (const tool of tools) {
        expect(tool.inputSchema.type, tool.name).toBe("object");
        lint(tool.inputSchema, `${tool.name} inputSchema`, "input", problems);
        if (tool.outputSchema) lint(tool.outputSchema, `${tool.name} outputSchema`, "output", problems);
      }
      expect(problems).toEqual([]);
    });
  }

  it("the lint catches what it must", () => {
    const problems: string[] = [];
    lint(
      {
        type: "object",
        properties: {
          m: { type: "object", additionalProperties: { type: "string" } },
          a: { type: ["string", "null"] },
          b: {},
          c: { prefixItems: [{ type: "integer" }], items: false },
        },
      },
      "x inputSchema",
      "input",
      problems,
    );
    expect(problems).toEqual([
      "x inputSchema: input object without additionalProperties: false",
      'x inputSchema.properties.a: type array ["string","null"]',
      "x inputSchema.properties.b: empty schema (accepts anything untyped)",
      "x inputSchema.properties.c: tuple (prefixItems)",
      "x inputSchema.properties.c.items: boolean schema",
    ]);
  });
});
