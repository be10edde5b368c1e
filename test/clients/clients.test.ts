import { exports } from "cloudflare:workers";
import { Client as ClientV2, StreamableHTTPClientTransport as TransportV2 } from "@modelcontextprotocol/client";
import { Client as ClientV1 } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport as TransportV1 } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { AjvJsonSchemaValidator } from "@modelcontextprotocol/sdk/validation/ajv";
import { describe, expect, it } from "vitest";
import { TOOLS } from "../../src/tools/index";
import { BASE, newKey, newTenant } from "../helpers";
import { ERROR_CASES, SEGMENT_LISTS, seedTenant } from "./tool-cases";

// The clients people run, against the real app: every tool once with valid arguments and once with a
// mistake, through the SDK v1 client with its default (ajv, draft-07) validator and the v2 client in
// both protocol eras. A result a client cannot validate throws here, so such a schema fails CI.

interface AnyClient {
  listTools(): Promise<{ tools: { name: string }[] }>;
  callTool(params: { name: string; arguments: Record<string, unknown> }): Promise<Record<string, unknown>>;
  close(): Promise<void>;
}

/** Requests through the worker's real fetch, spreading them over a few keys of one tenant (the per-key rate limit). */
function appFetch(keys: string[]) {
  let sent = 0;
  return (url: string | URL, init?: RequestInit): Promise<Response> => {
    const headers = new Headers(init?.headers);
    headers.set("authorization", `Bearer ${keys[Math.floor(sent++ / 25) % keys.length]}`);
    return exports.default.fetch(new Request(url, { ...init, headers }));
  };
}

const url = new URL(`${BASE}/mcp?toolsets=all`);
const CLIENTS: Record<string, (keys: string[]) => Promise<AnyClient>> = {
  "SDK v1 Client, default validator": async (keys) => {
    const client = new ClientV1({ name: "v1-client", version: "1.0.0" });
    await client.connect(new TransportV1(url, { fetch: appFetch(keys) }));
    return client as unknown as AnyClient;
  },
  "SDK v2 Client pinned to 2026-07-28": async (keys) => {
    const client = new ClientV2(
      { name: "v2-modern", version: "1.0.0" },
      { versionNegotiation: { mode: { pin: "2026-07-28" } } },
    );
    await client.connect(new TransportV2(url, { fetch: appFetch(keys) }));
    return client as unknown as AnyClient;
  },
  "SDK v2 Client in legacy mode": async (keys) => {
    const client = new ClientV2({ name: "v2-legacy", version: "1.0.0" }, { versionNegotiation: { mode: "legacy" } });
    await client.connect(new TransportV2(url, { fetch: appFetch(keys) }));
    return client as unknown as AnyClient;
  },
};

/** structuredContent is the text's JSON object, or `{ result }` for any other result. */
function structuredCopy(text: string): unknown {
  let value: unknown = text;
  try {
    value = JSON.parse(text);
  } catch {
    // plain text, e.g. "pong"
  }
  return typeof value === "object" && value !== null && !Array.isArray(value) ? value : { result: value };
}

function errorOf(result: Record<string, unknown>): { code: string; message: string } {
  const content = result.content as { type: string; text: string }[];
  return JSON.parse(content[0]!.text).error;
}

describe("real MCP clients call every tool", () => {
  it("the v1 default validator (ajv) compiles and checks schemas inside workerd", () => {
    const validate = new AjvJsonSchemaValidator().getValidator<unknown>({
      type: "object",
      properties: { a: { type: "integer" } },
      required: ["a"],
    });
    expect(validate({ a: 1 }).valid).toBe(true);
    expect(validate({ a: "1" }).valid).toBe(false);
  });

  for (const [label, connect] of Object.entries(CLIENTS)) {
    it(label, { timeout: 120_000 }, async () => {
      const t = await newTenant();
      // Every scope: each tool is called past its scope check (memory_reextract needs admin).
      const every = { scopes: ["read", "write", "admin"] };
      const keys = await Promise.all([1, 2, 3, 4, 5].map(async () => (await newKey(t.tenantId, every)).apiKey));
      const cases = await seedTenant(t);
      expect(Object.keys(cases).sort()).toEqual(TOOLS.map((x) => x.name).sort()); // a new tool needs a case here
      const client = await connect(keys);
      const listed = (await client.listTools()).tools.map((x) => x.name);
      expect(listed.sort()).toEqual(TOOLS.map((x) => x.name).sort());

      const failures: string[] = [];
      for (const tool of TOOLS) {
        try {
          const ok = await client.callTool({ name: tool.name, arguments: cases[tool.name]! });
          if (ok.isError) failures.push(`${tool.name}: ${JSON.stringify(errorOf(ok))}`);
          else {
            expect(ok.structuredContent, tool.name).toEqual(
              structuredCopy((ok.content as { text: string }[])[0]!.text),
            );
            const list = SEGMENT_LISTS[tool.name];
            if (list)
              expect(
                (ok.structuredContent as any)[list].some((s: any) => Array.isArray(s.line_range)),
                `${tool.name} line_range`,
              ).toBe(true);
          }
          const bad = await client.callTool({
            name: tool.name,
            arguments: { ...cases[tool.name], unexpected_argument: 1 },
          });
          expect(bad.isError, tool.name).toBe(true);
          expect(bad.structuredContent, tool.name).toBeUndefined();
          expect(errorOf(bad).message, tool.name).toMatch(
            /^Invalid parameter 'unexpected_argument': unknown parameter 'unexpected_argument'; (accepted parameters: \w+|this takes no parameters)/,
          );
        } catch (error) {
          failures.push(`${tool.name}: ${(error as Error).message}`);
        }
      }
      for (const c of ERROR_CASES) {
        const result = await client.callTool({ name: c.name, arguments: c.args });
        expect(result.isError, c.name).toBe(true);
        expect(errorOf(result).code, JSON.stringify(c)).toBe(c.code);
      }
      expect(failures).toEqual([]);
      await client.close();
    });
  }
});
