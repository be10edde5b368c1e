import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { admin, call, callTool, insideOneRateWindow, jsonrpc, newKey, newTenant, request } from "./helpers";

const pingBody = { jsonrpc: "2.0", method: "tools/call", params: { name: "ping", arguments: {} }, id: 1 };

describe("API keys", () => {
  it("rejects a missing key with 401 and WWW-Authenticate", async () => {
    const response = await request("/jsonrpc", { method: "POST", body: JSON.stringify(pingBody) });
    expect(response.status).toBe(401);
    expect(response.headers.get("www-authenticate")).toMatch(/^Bearer realm="context-edge"/);
    expect((await response.json<any>()).error.message).toMatch(/missing API key/);
  });

  it("rejects an unknown key", async () => {
    const response = await jsonrpc("ce_not-a-real-key", pingBody);
    expect(response.status).toBe(401);
    expect(response.headers.get("www-authenticate")).toContain("invalid_token");
  });

  it("accepts Authorization: Bearer and x-api-key", async () => {
    const t = await newTenant();
    expect(await call(t.apiKey, "ping")).toBe("pong");
    const viaHeader = await request("/jsonrpc", {
      method: "POST",
      headers: { "x-api-key": t.apiKey },
      body: JSON.stringify(pingBody),
    });
    expect((await viaHeader.json<any>()).result).toBe("pong");
  });

  it("stores only a hash and shows the secret once", async () => {
    const t = await newTenant();
    expect(t.apiKey).toMatch(/^ce_[A-Za-z0-9_-]{43}$/); // 256 random bits
    const row = await env.CONTROL.prepare("SELECT * FROM api_keys WHERE id = ?")
      .bind(t.keyId)
      .first<Record<string, unknown>>();
    expect(JSON.stringify(row)).not.toContain(t.apiKey);
    expect(row!.key_hash).toMatch(/^[0-9a-f]{64}$/);
    const list = await (await admin("GET", `/tenants/${t.tenantId}/keys`)).json<any>();
    expect(JSON.stringify(list)).not.toContain(t.apiKey);
    expect(list.keys[0]).toMatchObject({
      key_id: t.keyId,
      scopes: ["read", "write"],
      projects: null,
      revoked_at: null,
    });
  });

  it("records last use", async () => {
    const t = await newTenant();
    await call(t.apiKey, "ping");
    await expect
      .poll(async () => (await (await admin("GET", `/tenants/${t.tenantId}/keys`)).json<any>()).keys[0].last_used_at)
      .not.toBeNull();
  });

  it("rejects a revoked key", async () => {
    const t = await newTenant();
    expect(await call(t.apiKey, "ping")).toBe("pong");
    const revoked = await admin("DELETE", `/keys/${t.keyId}`);
    expect(revoked.status).toBe(200);
    expect((await revoked.json<any>()).revoked_at).not.toBeNull();
    expect((await jsonrpc(t.apiKey, pingBody)).status).toBe(401);
  });

  it("refuses writing tools to a read-only key with a clear permission error", async () => {
    const t = await newTenant({ scopes: ["read"] });
    expect(await call(t.apiKey, "ping")).toBe("pong");
    const response = await callTool(t.apiKey, "memory_store", { content: "a fact" });
    expect(response.error).toMatchObject({ code: -32000, data: { code: "PERMISSION_DENIED" } });
    expect(response.error!.message).toMatch(/needs a key with the 'write' scope/);
  });

  it("confines a project-restricted key to its projects", async () => {
    const t = await newTenant({ projects: ["alpha"] });
    const allowed = await callTool(t.apiKey, "memory_store", { content: "alpha fact", namespace: "alpha" });
    expect(allowed.error).toBeUndefined();
    const denied = await callTool(t.apiKey, "memory_store", { content: "beta fact", namespace: "beta" });
    expect(denied.error).toMatchObject({ data: { code: "PERMISSION_DENIED", details: { parameter: "namespace" } } });
    expect(denied.error!.message).toContain("'beta'");
  });

  it("rate-limits per key with 429 and Retry-After", async () => {
    const t = await newTenant();
    const other = await newKey(t.tenantId);
    await insideOneRateWindow();
    let limited: Response | undefined;
    for (let i = 0; i < 60 && !limited; i++) {
      const response = await jsonrpc(t.apiKey, pingBody);
      if (response.status === 429) limited = response;
    }
    expect(limited?.headers.get("retry-after")).toBe("60");
    // another key of the same tenant is unaffected
    expect(await call(other.apiKey, "ping")).toBe("pong");
  });
});

describe("admin API", () => {
  it("needs the admin token", async () => {
    expect((await admin("POST", "/tenants", { name: "x" }, "wrong")).status).toBe(401);
    expect((await request("/admin/tenants")).status).toBe(401);
    expect((await admin("POST", "/tenants", { name: "x" })).status).toBe(201);
  });

  it("validates bodies and names the parameter", async () => {
    const response = await admin("POST", "/tenants", { name: "" });
    expect(response.status).toBe(400);
    expect((await response.json<any>()).error).toMatchObject({
      code: "INVALID_PARAMETER",
      details: { parameter: "name" },
    });
    const t = await newTenant();
    const badScope = await admin("POST", `/tenants/${t.tenantId}/keys`, { scopes: ["root"] });
    expect((await badScope.json<any>()).error.details.parameter).toBe("scopes.0");
    expect((await admin("POST", `/tenants/nope/keys`, {})).status).toBe(404);
    expect((await admin("POST", "/tenants", "{not json")).status).toBe(400);
  });

  it("reports a tenant's stats to the operator and its own admin key only", async () => {
    const t = await newTenant({ scopes: ["admin"] });
    const other = await newTenant();
    await call(t.apiKey, "memory_batch_store", { memories: [{ content: "one" }, { content: "two" }] });
    await call(t.apiKey, "log_chat", { conversation_id: "c", role: "user", content: "hello" });
    const stats = await (await admin("GET", `/tenants/${t.tenantId}/stats`)).json<any>();
    expect(stats).toMatchObject({ tenant_id: t.tenantId, items: 3, stashed_items: 0, chunks: 3, conversations: 1 });
    expect(stats.pending_embeddings).toBeGreaterThanOrEqual(0);
    expect((await admin("GET", `/tenants/${t.tenantId}/stats`, undefined, t.apiKey)).status).toBe(200);
    expect((await admin("GET", `/tenants/${other.tenantId}/stats`, undefined, t.apiKey)).status).toBe(403);
  });

  it("lets a tenant admin key manage only its own tenant's keys", async () => {
    const a = await newTenant({ scopes: ["admin"] });
    const b = await newTenant();
    const created = await admin("POST", `/tenants/${a.tenantId}/keys`, { scopes: ["read"] }, a.apiKey);
    expect(created.status).toBe(201);
    expect((await admin("GET", `/tenants/${b.tenantId}/keys`, undefined, a.apiKey)).status).toBe(403);
    expect((await admin("DELETE", `/keys/${b.keyId}`, undefined, a.apiKey)).status).toBe(404);
    expect((await admin("POST", "/tenants", { name: "x" }, a.apiKey)).status).toBe(403);
    // a non-admin key gets a permission error, not access
    expect((await admin("GET", `/tenants/${b.tenantId}/keys`, undefined, b.apiKey)).status).toBe(403);
  });
});
