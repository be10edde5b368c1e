import { exports } from "cloudflare:workers";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { CfWorkerJsonSchemaValidator } from "@modelcontextprotocol/sdk/validation/cfworker";
import { describe, expect, it } from "vitest";
import { BASE, mcpPost, newTenant, request } from "./helpers";

async function connect(apiKey: string, query = ""): Promise<Client> {
  const transport = new StreamableHTTPClientTransport(new URL(`${BASE}/mcp${query}`), {
    requestInit: { headers: { authorization: `Bearer ${apiKey}` } },
    fetch: (url, init) => exports.default.fetch(new Request(url, init)),
  });
  const client = new Client(
    { name: "test-client", version: "1.0.0" },
    { jsonSchemaValidator: new CfWorkerJsonSchemaValidator() },
  );
  await client.connect(transport);
  return client;
}

const initialize = {
  jsonrpc: "2.0",
  id: 1,
  method: "initialize",
  params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "curl", version: "1" } },
};

describe("/mcp with the SDK's own client", () => {
  it("initialize -> tools/list -> tools/call ping", async () => {
    const t = await newTenant();
    const client = await connect(t.apiKey);
    expect(client.getServerVersion()).toMatchObject({ name: "context-edge" });
    const { tools } = await client.listTools();
    expect(tools.map((x) => x.name)).toContain("ping");
    const ping = tools.find((x) => x.name === "ping")!;
    expect(ping.annotations).toMatchObject({ readOnlyHint: true });
    const result = await client.callTool({ name: "ping", arguments: {} });
    expect(result.content).toEqual([{ type: "text", text: "pong" }]);
    expect(result.structuredContent).toEqual({ result: "pong" });
    await client.close();
  });

  it("returns structuredContent and a text copy; tool errors are isError results with the error as text only", async () => {
    const t = await newTenant();
    const client = await connect(t.apiKey);
    const list = await client.callTool({ name: "list_tool_identifiers", arguments: {} });
    expect(JSON.parse((list.content as any)[0].text)).toEqual(list.structuredContent);
    expect(list.structuredContent).toMatchObject({ success: true });
    const bad = await client.callTool({ name: "memory_store", arguments: { content: 42 } });
    expect(bad.isError).toBe(true);
    expect(bad.structuredContent).toBeUndefined();
    expect(JSON.parse((bad.content as any)[0].text)).toMatchObject({
      error: { code: "INVALID_PARAMETER", details: { parameter: "content" } },
    });
    await client.close();
  });
});

describe("/mcp transport", () => {
  it("answers JSON or SSE by the client's Accept order", async () => {
    const t = await newTenant();
    const json = await mcpPost(t.apiKey, initialize, { accept: "application/json, text/event-stream" });
    expect(json.headers.get("content-type")).toContain("application/json");
    expect((await json.json<any>()).result.serverInfo.name).toBe("context-edge");
    const sse = await mcpPost(t.apiKey, initialize, { accept: "text/event-stream, application/json" });
    expect(sse.headers.get("content-type")).toContain("text/event-stream");
    const text = await sse.text();
    expect(text).toMatch(/^event: message\ndata: /m);
    expect(JSON.parse(text.split("data: ")[1]!.split("\n")[0]!).result.serverInfo.name).toBe("context-edge");
  });

  it("negotiates a protocol version the SDK supports and rejects unknown ones", async () => {
    const t = await newTenant();
    const response = await mcpPost(t.apiKey, {
      ...initialize,
      params: { ...initialize.params, protocolVersion: "2025-11-25" },
    });
    expect((await response.json<any>()).result.protocolVersion).toBe("2025-11-25");
    const bad = await mcpPost(
      t.apiKey,
      { jsonrpc: "2.0", id: 2, method: "tools/list" },
      { headers: { "mcp-protocol-version": "1999-01-01" } },
    );
    expect(bad.status).toBe(400);
  });

  it("answers GET and DELETE with 405 (stateless server)", async () => {
    const t = await newTenant();
    for (const method of ["GET", "DELETE"]) {
      const response = await request("/mcp", {
        method,
        headers: { authorization: `Bearer ${t.apiKey}`, accept: "text/event-stream" },
      });
      expect(response.status).toBe(405);
      expect(response.headers.get("allow")).toBe("POST");
    }
  });

  it("validates Origin", async () => {
    const t = await newTenant();
    const evil = await mcpPost(t.apiKey, initialize, { headers: { origin: "https://evil.example" } });
    expect(evil.status).toBe(403);
    const same = await mcpPost(t.apiKey, initialize, { headers: { origin: "http://localhost" } });
    expect(same.status).toBe(200);
    // CORS names only an allowed origin, and nothing for a request that sent none (an agent, not a browser).
    expect(same.headers.get("access-control-allow-origin")).toBe("http://localhost");
    expect(evil.headers.get("access-control-allow-origin")).toBeNull();
    const none = await mcpPost(t.apiKey, initialize);
    expect(none.status).toBe(200);
    expect(none.headers.get("access-control-allow-origin")).toBeNull();
  });

  it("needs a key", async () => {
    const response = await mcpPost(null, initialize);
    expect(response.status).toBe(401);
    expect(response.headers.get("www-authenticate")).toContain("Bearer");
    expect((await response.json<any>()).error.message).toContain("missing API key");
  });

  it("lets browser clients send the 2026-07-28 request headers (CORS)", async () => {
    const response = await request("/mcp", {
      method: "OPTIONS",
      headers: {
        origin: "http://localhost",
        "access-control-request-method": "POST",
        "access-control-request-headers": "mcp-method, mcp-name, mcp-protocol-version",
      },
    });
    const allowed = (response.headers.get("access-control-allow-headers") ?? "").toLowerCase();
    for (const header of ["mcp-method", "mcp-name", "mcp-protocol-version", "authorization"])
      expect(allowed).toContain(header);
  });
});

describe("toolsets", () => {
  const listNames = async (apiKey: string, query: string) => {
    const response = await mcpPost(apiKey, { jsonrpc: "2.0", id: 1, method: "tools/list" }, { query });
    return ((await response.json<any>()).result.tools as { name: string }[]).map((x) => x.name);
  };

  it("shows the core set by default and more on request", async () => {
    const t = await newTenant();
    const core = await listNames(t.apiKey, "");
    expect(core).toEqual(expect.arrayContaining(["ping", "list_tool_identifiers", "memory_store", "search"]));
    expect(core).not.toContain("memory_batch_store");
    const memory = await listNames(t.apiKey, "?toolsets=memory");
    expect(memory).toContain("memory_batch_store");
    expect(memory).not.toContain("ping");
    const all = await listNames(t.apiKey, "?toolsets=all");
    expect(all.length).toBeGreaterThan(core.length);
    const both = await listNames(t.apiKey, "?toolsets=core,memory");
    expect(new Set(both)).toEqual(new Set([...core, ...memory]));
  });

  it("names the toolset to add when a tool outside the set is called", async () => {
    const t = await newTenant();
    const response = await mcpPost(t.apiKey, {
      jsonrpc: "2.0",
      id: 1,
      method: "tools/call",
      params: { name: "memory_batch_store", arguments: { memories: [] } },
    });
    const result = (await response.json<any>()).result;
    expect(result.isError).toBe(true);
    expect(result.structuredContent).toBeUndefined();
    const { error } = JSON.parse(result.content[0].text);
    expect(error).toMatchObject({ code: "INVALID_PARAMETER", details: { toolset: "memory" } });
    expect(error.message).toContain("?toolsets=core,memory");
  });

  it("rejects an unknown toolset name", async () => {
    const t = await newTenant();
    const response = await mcpPost(
      t.apiKey,
      { jsonrpc: "2.0", id: 1, method: "tools/list" },
      { query: "?toolsets=bogus" },
    );
    expect(response.status).toBe(400);
    expect((await response.json<any>()).error.message).toMatch(/Unknown toolset 'bogus'/);
  });
});
