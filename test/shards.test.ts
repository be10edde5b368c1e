import { createExecutionContext, waitOnExecutionContext } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { QueueUsageLog } from "../src/adapters/usage-queue";
import { app } from "../src/app";
import { noUnits } from "../src/billable-units";
import { openTenantSession } from "../src/control/bookmarks";
import { placeNewTenant, shardFill } from "../src/control/placement";
import { ROUTE_TTL_MS, routeKey, tenantShard } from "../src/control/routing";
import { shardDatabase, shardNames } from "../src/control/shards";
import type { UsageMessage } from "../src/messages";
import {
  admin,
  call,
  callTool,
  jsonrpc,
  moveTenant,
  newKey,
  newTenant,
  type RpcResponse,
  request,
  type TestTenant,
  waitForEmbeddings,
} from "./helpers";

/** Two tenants on two shards: placement's choice, or a move when it put both on the emptier shard. */
async function tenantsOnTwoShards(): Promise<[TestTenant, TestTenant]> {
  const first = await newTenant();
  const other = await newTenant();
  if (other.shard !== first.shard) return [first, other];
  return [first, await moveTenant(other, first.shard === "SHARD_0" ? "SHARD_1" : "SHARD_0")];
}

/** A request through the app with a CONTROL binding that records every statement it is sent. */
async function fetchCountingControl(path: string, init: RequestInit, statements: string[]): Promise<Response> {
  // A proxy, not a metered copy: the request meters its CONTROL again, and metering a metered handle unwraps it.
  const control = new Proxy(env.CONTROL, {
    get: (target, property) => {
      if (property === "prepare") return (sql: string) => (statements.push(sql), target.prepare(sql));
      const value = Reflect.get(target, property, target);
      return typeof value === "function" ? value.bind(target) : value;
    },
  });
  const ctx = createExecutionContext();
  const response = await app.fetch(new Request(`http://localhost${path}`, init), { ...env, CONTROL: control }, ctx);
  await response.text();
  await waitOnExecutionContext(ctx);
  return response;
}

const rpc = (apiKey: string, name: string, args: Record<string, unknown> = {}): RequestInit => ({
  method: "POST",
  headers: { authorization: `Bearer ${apiKey}`, "content-type": "application/json" },
  body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/call", params: { name, arguments: args } }),
});

describe("control database and data shards", () => {
  it("the deployment binds two shards, and every one holds the same schema", async () => {
    const names = shardNames(env);
    expect(names).toEqual(["SHARD_0", "SHARD_1"]);
    const schemaOf = async (name: string) =>
      (
        await shardDatabase(env, name)
          .prepare(
            "SELECT type, name, tbl_name, sql FROM sqlite_master WHERE name NOT LIKE 'sqlite_%' AND name NOT LIKE '_cf_%' ORDER BY type, name",
          )
          .all()
      ).results;
    const first = await schemaOf(names[0]!);
    expect(first.map((r) => r.name)).toContain("items");
    expect(first.map((r) => r.name)).not.toContain("api_keys");
    for (const name of names.slice(1)) expect(await schemaOf(name)).toEqual(first);
    const control = (
      await env.CONTROL.prepare("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name").all<{
        name: string;
      }>()
    ).results.map((r) => r.name);
    expect(control).toEqual(expect.arrayContaining(["api_keys", "job_failures", "tenants"]));
    expect(control).not.toContain("items");
  });

  it("a one-shard deployment runs the same code: tenants land on its one shard and work", async () => {
    const oneShard = { ...env, SHARD_1: undefined };
    const send = async (method: string, path: string, body?: unknown, key = "test-admin-token") => {
      const ctx = createExecutionContext();
      const response = await app.fetch(
        new Request(`http://localhost${path}`, {
          method,
          headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
          body: body === undefined ? undefined : JSON.stringify(body),
        }),
        oneShard,
        ctx,
      );
      await waitOnExecutionContext(ctx);
      return response;
    };
    const tenant = await (await send("POST", "/admin/tenants", { name: "one shard" })).json<{
      tenant_id: string;
      shard: string;
    }>();
    expect(tenant.shard).toBe("SHARD_0");
    const key = await (await send("POST", `/admin/tenants/${tenant.tenant_id}/keys`, { name: "k" })).json<{
      api_key: string;
    }>();
    const stored = await (
      await send(
        "POST",
        "/jsonrpc",
        {
          jsonrpc: "2.0",
          id: 1,
          method: "tools/call",
          params: { name: "memory_store", arguments: { content: "one shard is enough" } },
        },
        key.api_key,
      )
    ).json<RpcResponse>();
    expect(stored.result.id).toBeTruthy();
    expect(
      await shardDatabase(env, "SHARD_0")
        .prepare("SELECT COUNT(*) AS n FROM items WHERE tenant_id = ?")
        .bind(tenant.tenant_id)
        .first("n"),
    ).toBe(1);
    expect((await send("POST", "/admin/reconcile")).status).toBe(200); // no shard to name: there is one
  });

  it("shows each tenant's shard (GET /admin/tenants/:id and the list), to the operator and the tenant's own admin key", async () => {
    const [a, b] = await tenantsOnTwoShards();
    const shown = await (await admin("GET", `/tenants/${b.tenantId}`)).json<{ tenant_id: string; shard: string }>();
    expect(shown).toMatchObject({ tenant_id: b.tenantId, shard: b.shard });
    expect((await admin("GET", "/tenants/no-such-tenant")).status).toBe(404);
    const listed = (await (await admin("GET", "/tenants")).json<{ tenants: { tenant_id: string; shard: string }[] }>())
      .tenants;
    expect(listed.find((t) => t.tenant_id === a.tenantId)?.shard).toBe(a.shard);
    // A tenant admin key sees its own tenant only.
    const own = await newKey(a.tenantId, { scopes: ["read", "write", "admin"] });
    expect((await admin("GET", `/tenants/${a.tenantId}`, undefined, own.apiKey)).status).toBe(200);
    expect((await admin("GET", `/tenants/${b.tenantId}`, undefined, own.apiKey)).status).toBe(403);
  });

  it("writes, jobs and reads of a tenant stay on its shard, and tenants on other shards stay apart", async () => {
    const [a, b] = await tenantsOnTwoShards();
    await call(a.apiKey, "memory_store", { content: "The heron nests by the quarry lake" });
    await call(b.apiKey, "memory_store", { content: "The badger sleeps under the old quarry" });
    await waitForEmbeddings(a.tenantId);
    await waitForEmbeddings(b.tenantId);
    const itemsOn = async (db: D1Database, tenantId: string) =>
      (await db.prepare("SELECT COUNT(*) AS n FROM items WHERE tenant_id = ?").bind(tenantId).first<number>("n"))!;
    const vectorsOn = async (db: D1Database, tenantId: string) =>
      (await db
        .prepare("SELECT COUNT(*) AS n FROM local_vectors WHERE tenant_id = ?")
        .bind(tenantId)
        .first<number>("n"))!;
    expect([await itemsOn(a.db, a.tenantId), await itemsOn(b.db, a.tenantId)]).toEqual([1, 0]);
    expect([await itemsOn(b.db, b.tenantId), await itemsOn(a.db, b.tenantId)]).toEqual([1, 0]);
    expect([await vectorsOn(a.db, a.tenantId), await vectorsOn(b.db, b.tenantId)]).toEqual([1, 1]);
    const found = await call(a.apiKey, "search", { query: "quarry" });
    expect(JSON.stringify(found)).toContain("heron");
    expect(JSON.stringify(found)).not.toContain("badger");
  });

  it("a warm request pays no control round trip; a cold one pays one", async () => {
    const t = await newTenant();
    await call(t.apiKey, "ping"); // warms this isolate's routing cache and records last use
    const warm: string[] = [];
    expect((await fetchCountingControl("/jsonrpc", rpc(t.apiKey, "ping"), warm)).status).toBe(200);
    // Only the usage log's write, which reads its tenants' live shards once a flush (at most every 20 s an isolate).
    expect(warm.filter((sql) => !/FROM tenants t LEFT JOIN tenant_moves/.test(sql))).toEqual([]);
    const other = await newKey(t.tenantId);
    const cold: string[] = [];
    await fetchCountingControl("/jsonrpc", rpc(other.apiKey, "ping"), cold);
    expect(cold.filter((sql) => /api_keys/.test(sql) && /^select/i.test(sql))).toHaveLength(1);
  });

  it("a key revoked elsewhere stops within ROUTE_TTL_MS; one revoked here stops at once", async () => {
    const t = await newTenant();
    const now = Date.now();
    expect(await routeKey(env.CONTROL, t.apiKey, now)).not.toBeNull();
    // Another isolate revoked it: this one trusts its cache until the bound, then reads the control database.
    await env.CONTROL.prepare("UPDATE api_keys SET revoked_at = ? WHERE id = ?").bind(now, t.keyId).run();
    expect(await routeKey(env.CONTROL, t.apiKey, now + ROUTE_TTL_MS - 1)).not.toBeNull();
    expect(await routeKey(env.CONTROL, t.apiKey, now + ROUTE_TTL_MS + 1)).toBeNull();
    expect(ROUTE_TTL_MS).toBeLessThanOrEqual(60_000);

    const u = await newTenant();
    expect((await callTool(u.apiKey, "ping")).result).toBe("pong");
    expect((await admin("DELETE", `/keys/${u.keyId}`)).status).toBe(200);
    expect((await callTool(u.apiKey, "ping")).error?.code).toBe(-32001);
  });

  it("a deleted tenant's shard is forgotten at once in this isolate", async () => {
    const t = await newTenant();
    expect(await tenantShard(env.CONTROL, t.tenantId)).toBe(t.shard);
    expect([200, 202]).toContain((await admin("DELETE", `/tenants/${t.tenantId}`)).status);
    expect((await callTool(t.apiKey, "ping")).error?.code).toBe(-32001);
  });
});

describe("read replicas through D1 sessions", () => {
  it("answers with the tenant's bookmark on its shard and takes one back; a bookmark of another shard or a malformed one is ignored", async () => {
    const t = await newTenant();
    const send = (name: string, args: Record<string, unknown>, bookmark?: string) =>
      request("/jsonrpc", {
        method: "POST",
        headers: {
          authorization: `Bearer ${t.apiKey}`,
          "content-type": "application/json",
          ...(bookmark === undefined ? {} : { "x-d1-bookmark": bookmark }),
        },
        body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/call", params: { name, arguments: args } }),
      });
    const wrote = await send("memory_store", { content: "the kingfisher dives at dusk" });
    const bookmark = wrote.headers.get("x-d1-bookmark");
    expect(bookmark).toMatch(new RegExp(`^${t.shard}:[A-Za-z0-9-]+$`));
    const other = t.shard === "SHARD_0" ? "SHARD_1" : "SHARD_0";
    for (const presented of [
      bookmark!,
      `${other}:${bookmark!.split(":")[1]}`,
      "garbage",
      `${t.shard}:not a bookmark!`,
    ]) {
      const read = await send("search", { query: "kingfisher" }, presented);
      expect(read.status, presented).toBe(200);
      expect(
        (await read.json<RpcResponse>()).result.results.map((r: { content: string }) => r.content),
        presented,
      ).toEqual(["the kingfisher dives at dusk"]);
      const next = read.headers.get("x-d1-bookmark");
      expect(next! >= bookmark!, presented).toBe(true); // bookmarks only move forward
    }
  });
});

describe("where a request's session starts", () => {
  /** A shard whose sessions record their constraint and end at a given bookmark. */
  const shardAt = (ends: string | null, starts: string[]) =>
    ({
      withSession: (constraint: string) => (
        starts.push(constraint), { prepare: () => undefined, batch: async () => [], getBookmark: () => ends }
      ),
    }) as unknown as D1Database;

  it("at the primary for a tenant it has no bookmark of, then at the newest bookmark it knows or is shown for that shard", () => {
    const starts: string[] = [];
    const tenant = `tn_${crypto.randomUUID()}`;
    const first = openTenantSession(shardAt("00000002-0000", starts), "SHARD_0", tenant, null);
    expect(first.finish()).toBe("SHARD_0:00000002-0000");
    openTenantSession(shardAt(null, starts), "SHARD_0", tenant, null).finish();
    openTenantSession(shardAt(null, starts), "SHARD_0", tenant, "SHARD_0:00000001-0000").finish(); // older than known
    openTenantSession(shardAt(null, starts), "SHARD_0", tenant, "SHARD_0:00000009-0000").finish(); // newer: wins
    openTenantSession(shardAt(null, starts), "SHARD_1", tenant, "SHARD_0:00000009-0000").finish(); // another shard's: ignored
    openTenantSession(shardAt(null, starts), "SHARD_0", `tn_${crypto.randomUUID()}`, null).finish(); // another tenant
    expect(starts).toEqual([
      "first-primary",
      "00000002-0000",
      "00000002-0000",
      "00000009-0000",
      "first-primary",
      "first-primary",
    ]);
  });
});

describe("placement", () => {
  /** A stand-in shard that answers `SELECT 1` with the size D1 reports in meta.size_after. */
  const sized = (bytes: number) =>
    ({
      prepare: () => ({ run: async () => ({ meta: { size_after: bytes } }) }),
      batch: async () => [],
    }) as unknown as D1Database;
  const control = (counts: Record<string, number>) =>
    ({
      prepare: () => ({ all: async () => ({ results: Object.entries(counts).map(([shard, n]) => ({ shard, n })) }) }),
    }) as unknown as D1Database;

  it("puts a new tenant on the shard with the least data, then the fewest tenants, then the first name", async () => {
    expect(
      await placeNewTenant({ SHARD_0: sized(9_000), SHARD_1: sized(4_000), SHARD_2: sized(7_000) }, control({})),
    ).toBe("SHARD_1");
    expect(
      await placeNewTenant({ SHARD_0: sized(4_000), SHARD_1: sized(4_000) }, control({ SHARD_0: 3, SHARD_1: 2 })),
    ).toBe("SHARD_1");
    expect(
      await placeNewTenant({ SHARD_0: sized(4_000), SHARD_1: sized(4_000) }, control({ SHARD_0: 2, SHARD_1: 2 })),
    ).toBe("SHARD_0");
    expect(await placeNewTenant({ SHARD_10: sized(1), SHARD_2: sized(1) }, control({}))).toBe("SHARD_2");
    expect(await shardFill({ SHARD_0: sized(5), OTHER: sized(1) }, control({ SHARD_0: 1 }))).toEqual([
      { shard: "SHARD_0", bytes: 5, tenants: 1 },
    ]);
    await expect(placeNewTenant({}, control({}))).rejects.toThrow(/no data shard/);
  });

  it("places a tenant on the shard the operator names, and refuses a shard the deployment does not bind", async () => {
    for (const shard of ["SHARD_0", "SHARD_1"]) {
      const created = await admin("POST", "/tenants", { name: `placed on ${shard}`, shard });
      expect(created.status).toBe(201);
      expect(await created.json()).toMatchObject({ shard });
    }
    const unknown = await admin("POST", "/tenants", { name: "nowhere", shard: "SHARD_9" });
    expect(unknown.status).toBe(400);
    expect(await unknown.json()).toMatchObject({
      error: { code: "INVALID_PARAMETER", message: "No shard 'SHARD_9'; this deployment has: SHARD_0, SHARD_1" },
    });
  });

  it("measures real shards by the size D1 reports, and shows it to the operator only", async () => {
    const fill = await shardFill(env, env.CONTROL);
    expect(fill.map((f) => f.shard)).toEqual(["SHARD_0", "SHARD_1"]);
    for (const f of fill) expect(f.bytes).toBeGreaterThan(0);
    const shown = await (await admin("GET", "/shards")).json<{
      shards: { shard: string; bytes: number; tenants: number }[];
    }>();
    expect(shown.shards.map((s) => s.shard)).toEqual(["SHARD_0", "SHARD_1"]);
    const t = await newTenant({ scopes: ["read", "write", "admin"] });
    expect((await admin("GET", "/shards", undefined, t.apiKey)).status).toBe(403);
  });
});

describe("usage accounting off the request path", () => {
  it("a tool call's response path writes nothing to D1; the usage queue counts every call", async () => {
    const t = await newTenant();
    const statements: string[] = [];
    const db = t.db;
    // Requests read and write through a session on the shard: record what the session is sent.
    const recording = {
      withSession: (constraint: string) => {
        const session = db.withSession(constraint);
        return {
          prepare: (sql: string) => (statements.push(sql), session.prepare(sql)),
          batch: (s: D1PreparedStatement[]) => session.batch(s),
          getBookmark: () => session.getBookmark(),
        };
      },
      prepare: (sql: string) => (statements.push(sql), db.prepare(sql)),
      batch: (s: D1PreparedStatement[]) => db.batch(s),
    } as unknown as D1Database;
    const ctx = createExecutionContext();
    const response = await app.fetch(
      new Request("http://localhost/jsonrpc", rpc(t.apiKey, "search", { query: "anything" })),
      { ...env, [t.shard]: recording },
      ctx,
    );
    expect(response.status).toBe(200);
    await waitOnExecutionContext(ctx);
    expect(statements.length).toBeGreaterThan(0);
    expect(statements.filter((sql) => /^\s*(insert|update|delete)/i.test(sql))).toEqual([]);
    await expect
      .poll(
        async () =>
          (await call(t.apiKey, "get_usage_report", {})).tools?.find((r: { tool: string }) => r.tool === "search")
            ?.calls ?? 0,
        { timeout: 10_000 },
      )
      .toBe(1);
  });

  it("sends a request's calls as one queue message, split only under the Queues limit of 128 KB", async () => {
    const sent: UsageMessage[][] = [];
    const queue = {
      send: async (body: UsageMessage) => void sent.push([body]),
      sendBatch: async (batch: { body: UsageMessage }[]) => void sent.push(batch.map((m) => m.body)),
    };
    const log = new QueueUsageLog([queue as unknown as Queue<UsageMessage>]);
    const call = (i: number) => ({
      keyId: "key_1",
      tool: "log_chat",
      project: "p".repeat(200),
      conversationId: `c${i}`.padEnd(200, "x"),
      startedAt: i,
      durationMs: 1,
      errorCode: null,
      units: { ...noUnits(), d1RoundTrips: 0.02, d1Ms: 0.1 },
    });
    await log.record(
      "tn_a",
      Array.from({ length: 50 }, (_, i) => call(i)),
    );
    expect(sent).toHaveLength(1);
    expect(sent[0]![0]!.calls).toHaveLength(50);
    await log.record(
      "tn_a",
      Array.from({ length: 1000 }, (_, i) => call(i)),
    );
    // Several messages, sent in batches that each stay under sendBatch's 256 KB (test/platform-limits.test.ts).
    const batches = sent.slice(1);
    const messages = batches.flat();
    expect(messages.length).toBeGreaterThan(1);
    expect(messages.flatMap((m) => m.calls.map((c) => c.startedAt))).toEqual(Array.from({ length: 1000 }, (_, i) => i));
    for (const m of messages) expect(new TextEncoder().encode(JSON.stringify(m)).length).toBeLessThan(128 * 1024);
    for (const b of batches)
      expect(b.reduce((sum, m) => sum + new TextEncoder().encode(JSON.stringify(m)).length, 0)).toBeLessThanOrEqual(
        256_000,
      );
    const sends = sent.length;
    await log.record("tn_a", []);
    expect(sent).toHaveLength(sends);
  });

  it("counts exactly the calls made by concurrent clients of tenants on two shards", async () => {
    const [a, b] = await tenantsOnTwoShards();
    // Several keys per tenant keep the per-key rate limit (40 a minute in tests) out of the way.
    const keysOf = async (t: TestTenant) => [
      t.apiKey,
      ...(await Promise.all([1, 2, 3].map(() => newKey(t.tenantId)))).map((k) => k.apiKey),
    ];
    const clients = [
      ...(await keysOf(a)).map((key) => ({ key, tenant: a })),
      ...(await keysOf(b)).map((key) => ({ key, tenant: b })),
    ];
    const made = new Map<string, number>([
      [a.tenantId, 0],
      [b.tenantId, 0],
    ]);
    await Promise.all(
      clients.map(async ({ key, tenant }) => {
        for (let round = 0; round < 6; round++) {
          const calls = Array.from({ length: 5 }, (_, i) => ({
            jsonrpc: "2.0",
            id: i,
            method: "tools/call",
            params: { name: "ping", arguments: {} },
          }));
          const answers = await (await jsonrpc(key, calls)).json<RpcResponse[]>();
          expect(answers.map((r) => r.result)).toEqual(calls.map(() => "pong"));
          made.set(tenant.tenantId, made.get(tenant.tenantId)! + calls.length);
        }
      }),
    );
    const counted = async (t: TestTenant) =>
      (await t.db
        .prepare(
          "SELECT COALESCE(SUM(calls), 0) AS n FROM usage_hours WHERE tenant_id = ? AND source = 'tool' AND name = 'ping'",
        )
        .bind(t.tenantId)
        .first<number>("n"))!;
    await expect.poll(() => counted(a), { timeout: 15_000 }).toBe(made.get(a.tenantId));
    await expect.poll(() => counted(b), { timeout: 15_000 }).toBe(made.get(b.tenantId));
    await new Promise((r) => setTimeout(r, 1_500)); // nothing counted twice after the writes settle
    expect([await counted(a), await counted(b)]).toEqual([made.get(a.tenantId), made.get(b.tenantId)]);
  });
});
