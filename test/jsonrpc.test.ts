import { describe, expect, it } from "vitest";
import { callTool, jsonrpc, newTenant, request, tenantDb } from "./helpers";

describe("/jsonrpc", () => {
  it("answers seed 000's curl body with the tool's own result object", async () => {
    const t = await newTenant();
    const response = await jsonrpc(t.apiKey, {
      jsonrpc: "2.0",
      method: "tools/call",
      params: { name: "list_tool_identifiers", arguments: {} },
      id: 1,
    });
    expect(response.status).toBe(200);
    const body = await response.json<any>();
    expect(body).toMatchObject({ jsonrpc: "2.0", id: 1, result: { success: true } });
    expect(body.result.total_tools).toBe(body.result.tools.length);
    expect(body.result.tools[0]).toEqual({
      name: expect.any(String),
      category: expect.any(String),
      description: expect.any(String),
    });
    expect(body.result.categories).toEqual(expect.arrayContaining(["meta", "memory"]));
  });

  it("lists tools with JSON Schemas carrying the seeds' defaults and ranges", async () => {
    const t = await newTenant();
    const body = await (await jsonrpc(t.apiKey, { jsonrpc: "2.0", method: "tools/list", id: "a" })).json<any>();
    const retrieve = body.result.tools.find((x: any) => x.name === "retrieve_by_type");
    expect(retrieve.inputSchema.properties.top_k).toMatchObject({ default: 5, minimum: 1, maximum: 50 });
    expect(retrieve.inputSchema.required).toEqual(["query", "doc_type"]);
  });

  it("handles batches and notifications", async () => {
    const t = await newTenant();
    const batch = await jsonrpc(t.apiKey, [
      { jsonrpc: "2.0", method: "tools/call", params: { name: "ping" }, id: 1 },
      { jsonrpc: "2.0", method: "tools/call", params: { name: "ping" } },
      { jsonrpc: "2.0", method: "nope", id: 2 },
    ]);
    const answers = await batch.json<any[]>();
    expect(answers).toHaveLength(2);
    expect(answers[0]).toMatchObject({ id: 1, result: "pong" });
    expect(answers[1]).toMatchObject({ id: 2, error: { code: -32601 } });
    const onlyNotifications = await jsonrpc(t.apiKey, {
      jsonrpc: "2.0",
      method: "tools/call",
      params: { name: "ping" },
    });
    expect(onlyNotifications.status).toBe(204);
  });

  it("maps bad input to the standard codes, naming the parameter", async () => {
    const t = await newTenant();
    const parse = await jsonrpc(t.apiKey, "{not json");
    expect(parse.status).toBe(400);
    expect((await parse.json<any>()).error.code).toBe(-32700);
    expect((await (await jsonrpc(t.apiKey, { method: "tools/list", id: 1 })).json<any>()).error.code).toBe(-32600);
    expect((await (await jsonrpc(t.apiKey, [])).json<any>()).error.code).toBe(-32600);
    expect(
      (await (await jsonrpc(t.apiKey, { jsonrpc: "2.0", method: "frobnicate", id: 1 })).json<any>()).error.code,
    ).toBe(-32601);

    const unknownTool = await callTool(t.apiKey, "no_such_tool");
    expect(unknownTool.error).toMatchObject({ code: -32602, data: { details: { parameter: "name" } } });
    expect(unknownTool.error!.message).toContain("'no_such_tool'");

    const missing = await callTool(t.apiKey, "retrieve_by_type", { doc_type: "code" });
    expect(missing.error).toMatchObject({ code: -32602, data: { details: { parameter: "query" } } });
    expect(missing.error!.message).toBe("Invalid parameter 'query': is required (string)");

    const wrongType = await callTool(t.apiKey, "retrieve_by_type", { query: "x", doc_type: "code", top_k: "five" });
    expect(wrongType.error!.message).toBe("Invalid parameter 'top_k': expected number, got string");

    const outOfRange = await callTool(t.apiKey, "retrieve_by_type", { query: "x", doc_type: "code", top_k: 80 });
    expect(outOfRange.error!.message).toBe("Invalid parameter 'top_k': value must be at most 50 (got 80)");

    const badArgs = await jsonrpc(t.apiKey, {
      jsonrpc: "2.0",
      method: "tools/call",
      params: { name: "ping", arguments: [1] },
      id: 1,
    });
    expect((await badArgs.json<any>()).error).toMatchObject({ code: -32602, data: { parameter: "arguments" } });
  });

  it("refuses a body over the documented limit with 413", async () => {
    const t = await newTenant();
    const big = JSON.stringify({
      jsonrpc: "2.0",
      method: "tools/call",
      params: { name: "ping", arguments: { random_string: "x".repeat(1_100_000) } },
      id: 1,
    });
    const response = await jsonrpc(t.apiKey, big);
    expect(response.status).toBe(413);
    expect((await response.json<any>()).error.message).toMatch(/1048576-byte limit/);
  });
});

describe("usage log", () => {
  it("records every call per tenant, and tenants never see each other's", async () => {
    const a = await newTenant();
    const b = await newTenant();
    await callTool(a.apiKey, "ping");
    await callTool(a.apiKey, "retrieve_by_type", { doc_type: "code" });
    await callTool(b.apiKey, "ping");
    const hours = async (tenantId: string) =>
      (
        await (
          await tenantDb(tenantId)
        )
          .prepare(
            "SELECT name, calls, errors, latency_hist != '{}' AS timed FROM usage_hours WHERE tenant_id = ? AND source = 'tool' ORDER BY name",
          )
          .bind(tenantId)
          .all()
      ).results;
    // The isolate writes its calls' hours within FLUSH_USAGE_MS (50 ms in tests) of the response.
    await expect.poll(async () => (await hours(a.tenantId)).length, { timeout: 10_000 }).toBe(2);
    expect(await hours(a.tenantId)).toEqual([
      { name: "ping", calls: 1, errors: 0, timed: 1 },
      { name: "retrieve_by_type", calls: 1, errors: 1, timed: 1 },
    ]);
    // The failed call keeps a row of its own, with its duration.
    const failed = await (await tenantDb(a.tenantId))
      .prepare("SELECT tool, error_code, duration_ms FROM tool_calls WHERE tenant_id = ? AND error_code IS NOT NULL")
      .bind(a.tenantId)
      .all();
    expect(failed.results).toEqual([
      { tool: "retrieve_by_type", error_code: "INVALID_PARAMETER", duration_ms: expect.any(Number) },
    ]);
    await expect.poll(async () => (await hours(b.tenantId)).map((r) => r.name), { timeout: 10_000 }).toEqual(["ping"]);
  });
});

describe("/health", () => {
  it("needs no key and reveals no tenant data", async () => {
    const response = await request("/health");
    expect(response.status).toBe(200);
    const body = await response.json<any>();
    expect(Object.keys(body).sort()).toEqual(["name", "status", "time", "version"]);
  });

  it("never answers an unknown route with a 500", async () => {
    expect((await request("/nope")).status).toBe(404);
  });
});
