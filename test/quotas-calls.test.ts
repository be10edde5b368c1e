import { describe, expect, it } from "vitest";
import { admin, BASE, callTool, insideOneRateWindow, jsonrpc, newKey, newTenant, type RpcResponse } from "./helpers";
import { fetchWorker, setQuotas } from "./quota-helpers";

// The tenant's calls_per_minute (TENANT_RATE_LIMITER) through the real routes, set low for one tenant by the operator.

describe("calls per minute per tenant (TENANT_RATE_LIMITER)", () => {
  it("one count across the tenant's keys, each tool call charged, set by the operator; refusals name the quota", async () => {
    const t = await newTenant();
    const other = await newKey(t.tenantId);
    await insideOneRateWindow();
    const set = await setQuotas(t.tenantId, { calls_per_minute: 6 });
    expect(set).toMatchObject({ quota_overrides: { calls_per_minute: 6 }, quotas: { calls_per_minute: 6 } });

    for (const key of [t.apiKey, t.apiKey, other.apiKey, other.apiKey, t.apiKey])
      expect((await callTool(key, "ping")).result).toBe("pong");
    // A batch of three: its first call passes (6 of 6), the other two are refused in the batch with the quota named.
    const batch = await (
      await jsonrpc(
        other.apiKey,
        [1, 2, 3].map((id) => ({ jsonrpc: "2.0", method: "tools/call", params: { name: "ping", arguments: {} }, id })),
      )
    ).json<RpcResponse[]>();
    expect(batch[0]!.result).toBe("pong");
    for (const answer of batch.slice(1)) {
      expect(answer.error).toMatchObject({
        code: -32029,
        data: { code: "RATE_LIMITED", details: { quota: "calls_per_minute", limit: 6, retry_after_seconds: 60 } },
      });
      expect(answer.error!.message).toContain("(calls_per_minute) is 6 for this tenant, across all its API keys");
    }
    // The tenant is over: a new request from either key is refused before any call, as the per-key limit refuses.
    const refused = await jsonrpc(other.apiKey, {
      jsonrpc: "2.0",
      method: "tools/call",
      params: { name: "ping", arguments: {} },
      id: 9,
    });
    expect(refused.status).toBe(429);
    expect(refused.headers.get("retry-after")).toBe("60");
    expect(await refused.json()).toMatchObject({
      error: { code: -32029, data: { code: "RATE_LIMITED", details: { quota: "calls_per_minute", limit: 6 } } },
    });
    // A deployment without the binding (older wrangler.toml) skips the tenant's limit.
    const unbound = await fetchWorker(
      new Request(`${BASE}/jsonrpc`, {
        method: "POST",
        headers: { authorization: `Bearer ${other.apiKey}`, "content-type": "application/json" },
        body: JSON.stringify({ jsonrpc: "2.0", method: "tools/call", params: { name: "ping", arguments: {} }, id: 10 }),
      }),
      { TENANT_RATE_LIMITER: undefined },
    );
    expect(((await unbound.json()) as RpcResponse).result).toBe("pong");
    // Another tenant is untouched.
    expect((await callTool((await newTenant()).apiKey, "ping")).result).toBe("pong");
    // "unlimited" lifts the tenant's limit (its keys' own limits still apply).
    await setQuotas(t.tenantId, { calls_per_minute: "unlimited" });
    expect((await callTool(t.apiKey, "ping")).result).toBe("pong");
  });

  it("a key over its own limit spends none of its tenant's: the tenant's other keys keep their share", async () => {
    const t = await newTenant();
    const calm = await newKey(t.tenantId);
    await insideOneRateWindow();
    // The runaway key spends its own 40 calls (the tests' per-key limit) while its tenant has no limit of its own...
    await setQuotas(t.tenantId, { calls_per_minute: "unlimited" });
    const pings = (n: number) =>
      Array.from({ length: n }, (_, id) => ({
        jsonrpc: "2.0",
        method: "tools/call",
        params: { name: "ping", arguments: {} },
        id,
      }));
    await jsonrpc(t.apiKey, pings(41));
    // ...then keeps calling under a tenant limit of 3: refused by its key's limit, it charges the tenant nothing.
    await setQuotas(t.tenantId, { calls_per_minute: 3 });
    for (let i = 0; i < 4; i++) {
      const refused = await jsonrpc(t.apiKey, pings(1)[0]);
      expect(refused.status).toBe(429);
      expect(((await refused.json()) as RpcResponse).error!.message).toContain("for this API key");
    }
    for (let i = 0; i < 3; i++) expect((await callTool(calm.apiKey, "ping")).result).toBe("pong");
    expect((await jsonrpc(calm.apiKey, pings(1)[0])).status).toBe(429);
  });

  it("the admin API: operator only, the binding's limit is the ceiling, bad values refused", async () => {
    const t = await newTenant();
    const tenantAdmin = await newKey(t.tenantId, { scopes: ["read", "write", "admin"] });
    expect(
      (await admin("PATCH", `/tenants/${t.tenantId}`, { quotas: { max_items: 10 } }, tenantAdmin.apiKey)).status,
    ).toBe(403);
    const tooHigh = await admin("PATCH", `/tenants/${t.tenantId}`, { quotas: { calls_per_minute: 200_000 } });
    expect(tooHigh.status).toBe(400);
    expect(await tooHigh.json()).toMatchObject({
      error: { code: "INVALID_PARAMETER", details: { parameter: "quotas.calls_per_minute" } },
    });
    for (const quotas of [{ max_items: -1 }, { max_items: 1.5 }, { max_items: "lots" }, { max_tokens: 3 }]) {
      expect((await admin("PATCH", `/tenants/${t.tenantId}`, { quotas })).status, JSON.stringify(quotas)).toBe(400);
    }
    expect((await admin("PATCH", "/tenants/tn_nobody", { quotas: { max_items: 3 } })).status).toBe(404);
    // A patch merges: set two, clear one (0 = the default, as in the env vars), the other stays.
    await setQuotas(t.tenantId, { max_items: 10, max_pending_jobs: "unlimited" });
    const shown = await setQuotas(t.tenantId, { max_items: 0 });
    expect(shown.quota_overrides).toEqual({ max_pending_jobs: "unlimited" });
    expect(shown.quotas).toEqual({
      max_items: 1_000_000,
      max_bytes: 1_000_000_000,
      max_pending_jobs: null,
      calls_per_minute: 100_000,
      extraction_neurons_per_day: 50_000,
    });
    expect(await (await admin("GET", `/tenants/${t.tenantId}`)).json()).toMatchObject({
      quota_overrides: { max_pending_jobs: "unlimited" },
      quotas: { max_pending_jobs: null },
    });
  });
});
