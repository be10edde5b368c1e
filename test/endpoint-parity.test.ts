import { describe, expect, it } from "vitest";
import { jsonrpc, mcpPost, newTenant } from "./helpers";

// The same mistake gets the same JSON-RPC code, message and HTTP status from /mcp and /jsonrpc.

const call = (params: unknown) => ({ jsonrpc: "2.0", id: 1, method: "tools/call", params });
const CASES: { mistake: string; body: unknown; status: number; code: number; message: string; id?: unknown }[] = [
  {
    mistake: "arguments is an array",
    body: call({ name: "ping", arguments: [] }),
    status: 200,
    code: -32602,
    message: "Invalid parameter 'arguments': expected an object, got array",
  },
  {
    mistake: "arguments is a string",
    body: call({ name: "ping", arguments: "s" }),
    status: 200,
    code: -32602,
    message: "Invalid parameter 'arguments': expected an object, got string",
  },
  {
    mistake: "arguments is null",
    body: call({ name: "ping", arguments: null }),
    status: 200,
    code: -32602,
    message: "Invalid parameter 'arguments': expected an object, got null",
  },
  {
    mistake: "no params",
    body: { jsonrpc: "2.0", id: 1, method: "tools/call" },
    status: 200,
    code: -32602,
    message: 'Invalid params: expected {"name": <tool>, "arguments": {...}}',
  },
  {
    mistake: "params is an array",
    body: call([]),
    status: 200,
    code: -32602,
    message: 'Invalid params: expected {"name": <tool>, "arguments": {...}}',
  },
  {
    mistake: "no name",
    body: call({ arguments: {} }),
    status: 200,
    code: -32602,
    message: "Invalid parameter 'name': is required (the tool name as a string)",
  },
  {
    mistake: "name is a number",
    body: call({ name: 5 }),
    status: 200,
    code: -32602,
    message: "Invalid parameter 'name': expected the tool name as a string, got number",
  },
  {
    mistake: "id is an object",
    body: { jsonrpc: "2.0", id: { a: 1 }, method: "tools/list" },
    status: 400,
    code: -32600,
    message: "Invalid Request: 'id' must be a string, number or null",
    id: null,
  },
  {
    mistake: 'jsonrpc is "1.0"',
    body: { jsonrpc: "1.0", id: 1, method: "tools/list" },
    status: 400,
    code: -32600,
    message: "Invalid Request: 'jsonrpc' must be \"2.0\"",
  },
  {
    mistake: "no jsonrpc member",
    body: { id: 1, method: "tools/list" },
    status: 400,
    code: -32600,
    message: "Invalid Request: 'jsonrpc' must be \"2.0\"",
  },
  {
    mistake: "method is a number",
    body: { jsonrpc: "2.0", id: 1, method: 7 },
    status: 400,
    code: -32600,
    message: "Invalid Request: 'method' must be a string",
  },
  {
    mistake: "a bare string",
    body: '"hello"',
    status: 400,
    code: -32600,
    message: "Invalid Request: expected a JSON-RPC 2.0 object",
    id: null,
  },
  { mistake: "empty batch", body: "[]", status: 400, code: -32600, message: "Invalid Request: empty batch", id: null },
  {
    mistake: "not JSON",
    body: "{not json",
    status: 400,
    code: -32700,
    message: "Parse error: request body is not valid JSON",
    id: null,
  },
];

async function post(endpoint: "/mcp" | "/jsonrpc", apiKey: string, body: unknown): Promise<Response> {
  if (endpoint === "/jsonrpc") return jsonrpc(apiKey, body);
  if (typeof body !== "string") return mcpPost(apiKey, body);
  const { request } = await import("./helpers");
  return request("/mcp", {
    method: "POST",
    headers: {
      authorization: `Bearer ${apiKey}`,
      "content-type": "application/json",
      accept: "application/json, text/event-stream",
    },
    body,
  });
}

describe("/mcp and /jsonrpc answer the same mistake alike", () => {
  for (const c of CASES) {
    it(c.mistake, async () => {
      const t = await newTenant();
      for (const endpoint of ["/mcp", "/jsonrpc"] as const) {
        const response = await post(endpoint, t.apiKey, c.body);
        expect(response.status, endpoint).toBe(c.status);
        const body = await response.json<any>();
        expect(body, endpoint).toMatchObject({
          jsonrpc: "2.0",
          id: c.id === undefined ? 1 : c.id,
          error: { code: c.code, message: c.message },
        });
      }
    });
  }

  it("a tool's own refusal says the same on both (an isError result on /mcp, -32602 on /jsonrpc)", async () => {
    const t = await newTenant();
    const body =
      '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"search","arguments":{"query":"x","limit":1e999,"namespce":"p"}}}';
    const viaJsonRpc = await (await post("/jsonrpc", t.apiKey, body)).json<any>();
    expect(viaJsonRpc.error).toMatchObject({
      code: -32602,
      message: "Invalid parameter 'limit': must be a finite number",
    });
    const viaMcp = await (await post("/mcp", t.apiKey, body)).json<any>();
    expect(viaMcp.result.isError).toBe(true);
    expect(JSON.parse(viaMcp.result.content[0].text).error).toMatchObject({
      code: "INVALID_PARAMETER",
      message: viaJsonRpc.error.message,
    });
    const unknown = await (
      await post("/jsonrpc", t.apiKey, {
        jsonrpc: "2.0",
        id: 1,
        method: "tools/call",
        params: { name: "memory_store", arguments: { content: "x", namespce: "p" } },
      })
    ).json<any>();
    expect(unknown.error.message).toBe(
      "Invalid parameter 'namespce': unknown parameter 'namespce'; accepted parameters: content, tags, importance, metadata, type, key, namespace",
    );
  });

  it("says what a multi-shape parameter accepts", async () => {
    const t = await newTenant();
    const answer = async (name: string, args: Record<string, unknown>) =>
      (
        await (
          await post("/jsonrpc", t.apiKey, {
            jsonrpc: "2.0",
            id: 1,
            method: "tools/call",
            params: { name, arguments: args },
          })
        ).json<any>()
      ).error.message;
    expect(await answer("context_stash", { project_id: "p", filters: 5 })).toBe(
      "Invalid parameter 'filters': expected a string or an object, got number",
    );
    expect(await answer("context_analyze_usage", { project_id: "p", context_descriptors: true })).toBe(
      "Invalid parameter 'context_descriptors': expected a string or an object, got boolean",
    );
    expect(await answer("log_chat", { conversation_id: "c", role: "user", content: "x", timestamp: true })).toBe(
      "Invalid parameter 'timestamp': expected a string or a number, got boolean",
    );
    expect(await answer("context_stash", { project_id: "p", filters: { created_after: [] } })).toBe(
      "Invalid parameter 'filters.created_after': expected a string or a number, got array",
    );
  });
});
