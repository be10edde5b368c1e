import { createExecutionContext, waitOnExecutionContext } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { afterEach, describe, expect, it } from "vitest";
import { VectorizeVectorIndex } from "../src/adapters/vectorize-index";
import { forgetRoutes } from "../src/control/routing";
import { shardDatabase } from "../src/control/shards";
import { chooseVectorIndex, vectorIndexNames } from "../src/control/vector-indexes";
import type { Env } from "../src/env";
import worker from "../src/index";
import { noWait, openShard } from "../src/open-tenant";
import { FakeVectorize } from "./fakes/fake-vectorize";
import { ADMIN_TOKEN, BASE, call, newKey, newTenant } from "./helpers";
import { deliverJobs, lostQueue } from "./ownership-fixtures";

// One Vectorize index holds 50,000 namespaces (a tenant each) and 10 M vectors, whatever the number of D1 shards, so a
// deployment binds more (VECTORIZE, VECTORIZE_<name>) and each tenant's vectors live in one of them, chosen when the
// tenant is created. Through the Worker's entries with the Vectorize adapter over two fakes that enforce those limits.
const DIMS = 256;

function deployment(first: FakeVectorize, second: FakeVectorize): Partial<typeof env> {
  return {
    VECTOR_INDEX: "vectorize",
    EMBEDDING_DIMENSIONS: String(DIMS),
    VECTORIZE: first as unknown as Vectorize,
    VECTORIZE_1: second as unknown as Vectorize,
  };
}

async function fetchWith(
  overrides: Partial<typeof env>,
  path: string,
  init: { method: string; body?: unknown; token: string },
): Promise<Response> {
  const ctx = createExecutionContext();
  const headers = { authorization: `Bearer ${init.token}`, "content-type": "application/json" };
  const body = init.body === undefined ? undefined : JSON.stringify(init.body);
  const response = await worker.fetch!(
    new Request(`${BASE}${path}`, { method: init.method, headers, body }) as any,
    { ...env, ...overrides },
    ctx,
  );
  await waitOnExecutionContext(ctx);
  return response as unknown as Response;
}

const createTenant = (overrides: Partial<typeof env>, body: Record<string, unknown>) =>
  fetchWith(overrides, "/admin/tenants", { method: "POST", body, token: ADMIN_TOKEN });

/** A vector-only search through /jsonrpc: what it finds comes from the tenant's Vectorize index alone. */
async function vectorSearch(overrides: Partial<typeof env>, apiKey: string, query: string): Promise<string[]> {
  const rpc = {
    jsonrpc: "2.0",
    id: 1,
    method: "tools/call",
    params: { name: "search", arguments: { query, mode: "vector", limit: 5 } },
  };
  const response = await fetchWith(overrides, "/jsonrpc", { method: "POST", body: rpc, token: apiKey });
  const body = await response.json<{ result?: { results: { content: string }[] }; error?: unknown }>();
  if (!body.result) throw new Error(`search failed: ${JSON.stringify(body.error)}`);
  return body.result.results.map((r) => r.content);
}

const idsOf = (fake: FakeVectorize, tenantId: string) =>
  [...fake.vectors.keys()].filter((id) => id.startsWith(`${tenantId}:`));

/** Stores memories and runs their embed job with the deployment's bindings (the queue's own consumer uses the local index). */
async function storeEmbedded(
  overrides: Partial<typeof env>,
  tenantId: string,
  apiKey: string,
  contents: string[],
): Promise<void> {
  const stored = await call<{ ids: string[] }>(apiKey, "memory_batch_store", {
    memories: contents.map((content) => ({ content })),
  });
  await deliverJobs([{ type: "embed", tenantId, itemIds: stored.ids }], overrides);
}

describe("Vectorize indexes", () => {
  afterEach(async () => {
    await env.CONTROL.prepare("DELETE FROM tenants WHERE id LIKE 'filler-%'").run();
  });

  it("a new tenant goes to the index with the fewest vectors; its vectors, searches and deletion stay in that index", async () => {
    const first = new FakeVectorize(DIMS, ["project"], { heldElsewhere: 5_000 });
    const second = new FakeVectorize(DIMS);
    const overrides = deployment(first, second);
    expect(vectorIndexNames({ ...env, ...overrides })).toEqual(["VECTORIZE", "VECTORIZE_1"]);

    const created = await createTenant(overrides, { name: "placed" });
    expect(created.status).toBe(201);
    const tenant = await created.json<{ tenant_id: string; vector_index: string }>();
    expect(tenant.vector_index).toBe("VECTORIZE_1");
    expect(
      await (
        await fetchWith(overrides, `/admin/tenants/${tenant.tenant_id}`, { method: "GET", token: ADMIN_TOKEN })
      ).json(),
    ).toMatchObject({ vector_index: "VECTORIZE_1" });
    const shown = await (await fetchWith(overrides, "/admin/shards", { method: "GET", token: ADMIN_TOKEN })).json<{
      vector_indexes: { name: string; vectors: number }[];
    }>();
    expect(shown.vector_indexes.map((v) => [v.name, v.vectors])).toEqual([
      ["VECTORIZE", 5_000],
      ["VECTORIZE_1", 0],
    ]);

    const { apiKey } = await newKey(tenant.tenant_id);
    await storeEmbedded(overrides, tenant.tenant_id, apiKey, [
      "The lighthouse keeper feeds the gulls at dawn.",
      "Quarterly invoices go out on the first Monday.",
    ]);
    expect(idsOf(second, tenant.tenant_id)).toHaveLength(2);
    expect(idsOf(first, tenant.tenant_id)).toEqual([]);
    expect(first.calls.filter((c) => c.method !== "describe")).toEqual([]);
    expect((await vectorSearch(overrides, apiKey, "lighthouse keeper gulls"))[0]).toBe(
      "The lighthouse keeper feeds the gulls at dawn.",
    );

    // Placed on the other by name, a second tenant's vectors go there, and neither sees the other's.
    const other = await (await createTenant(overrides, { name: "named", vector_index: "VECTORIZE" })).json<{
      tenant_id: string;
      vector_index: string;
    }>();
    expect(other.vector_index).toBe("VECTORIZE");
    const otherKey = (await newKey(other.tenant_id)).apiKey;
    await storeEmbedded(overrides, other.tenant_id, otherKey, ["The lighthouse was repainted red and white."]);
    expect(idsOf(first, other.tenant_id)).toHaveLength(1);
    expect(await vectorSearch(overrides, otherKey, "lighthouse repainted red and white")).toEqual([
      "The lighthouse was repainted red and white.",
    ]);
    expect(await vectorSearch(overrides, otherKey, "keeper feeds the gulls at dawn")).toEqual([]);
    expect((await vectorSearch(overrides, apiKey, "keeper feeds the gulls at dawn"))[0]).toBe(
      "The lighthouse keeper feeds the gulls at dawn.",
    );

    // Deleting the tenant removes its vectors from its own index.
    const lost = lostQueue();
    expect(
      (
        await fetchWith({ ...overrides, JOBS: lost.binding }, `/admin/tenants/${tenant.tenant_id}`, {
          method: "DELETE",
          token: ADMIN_TOKEN,
        })
      ).status,
    ).toBe(202);
    for (
      let pending = lost.sent.splice(0), runs = 0;
      pending.length > 0;
      pending = lost.sent.splice(0).filter((m) => m.type === "delete")
    ) {
      expect(++runs).toBeLessThan(20);
      await deliverJobs(pending, { ...overrides, JOBS: lost.binding });
    }
    expect(
      await env.CONTROL.prepare("SELECT COUNT(*) AS n FROM tenants WHERE id = ?").bind(tenant.tenant_id).first("n"),
    ).toBe(0);
    expect(idsOf(second, tenant.tenant_id)).toEqual([]);
    expect(idsOf(first, other.tenant_id)).toHaveLength(1);
  });

  it("a tenant created before there were several indexes (no vector_index) keeps its vectors in VECTORIZE", async () => {
    const t = await newTenant(); // the test deployment keeps vectors locally: nothing is chosen
    expect(
      await env.CONTROL.prepare("SELECT vector_index FROM tenants WHERE id = ?").bind(t.tenantId).first("vector_index"),
    ).toBeNull();
    const first = new FakeVectorize(DIMS, ["project"], { heldElsewhere: 5_000 });
    const second = new FakeVectorize(DIMS);
    const overrides = deployment(first, second);
    await storeEmbedded(overrides, t.tenantId, t.apiKey, ["Seed potatoes are chitted on the windowsill in March."]);
    expect(idsOf(first, t.tenantId)).toHaveLength(1);
    expect(second.vectors.size).toBe(0);
    expect(await vectorSearch(overrides, t.apiKey, "seed potatoes windowsill")).toEqual([
      "Seed potatoes are chitted on the windowsill in March.",
    ]);
  });

  it("an index holding 50,000 tenants or 10 M vectors takes no new tenant; with none left, creating one says what to add", async () => {
    // VECTORIZE holds fewer vectors but 50,000 tenants (namespaces): the new tenant goes to VECTORIZE_1.
    await env.CONTROL.prepare(
      `WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 50000)
       INSERT INTO tenants (id, name, created_at, shard, vector_index) SELECT 'filler-' || i, 'filler', 0, 'SHARD_0', 'VECTORIZE' FROM n`,
    ).run();
    const overrides = deployment(
      new FakeVectorize(DIMS),
      new FakeVectorize(DIMS, ["project"], { heldElsewhere: 9_000_000 }),
    );
    expect(await (await createTenant(overrides, { name: "beside the full one" })).json()).toMatchObject({
      vector_index: "VECTORIZE_1",
    });

    // VECTORIZE_1 at 10 M vectors as well: no index has room.
    const full = deployment(
      new FakeVectorize(DIMS),
      new FakeVectorize(DIMS, ["project"], { heldElsewhere: 10_000_000 }),
    );
    const refused = await createTenant(full, { name: "no room" });
    expect(refused.status).toBe(500);
    const error = (await refused.json<{ error: { message: string } }>()).error;
    expect(error.message).toMatch(/Every Vectorize index is full .*VECTORIZE_<name>/);
    expect(await env.CONTROL.prepare("SELECT COUNT(*) AS n FROM tenants WHERE name = 'no room'").first("n")).toBe(0);
  }, 30_000);

  it("an unknown index, or one named where vectors are kept locally, is refused by name", async () => {
    const overrides = deployment(new FakeVectorize(DIMS), new FakeVectorize(DIMS));
    for (const [bindings, name] of [
      [overrides, "VECTORIZE_9"],
      [overrides, "SHARD_0"],
      [{}, "VECTORIZE"],
    ] as const) {
      const response = await createTenant(bindings, { name: "misplaced", vector_index: name });
      expect(response.status).toBe(400);
      const error = (await response.json<{ error: { message: string; details: { parameter: string } } }>()).error;
      expect(error.details.parameter).toBe("vector_index");
      expect(error.message).toContain(name);
    }
    expect(await env.CONTROL.prepare("SELECT COUNT(*) AS n FROM tenants WHERE name = 'misplaced'").first("n")).toBe(0);
  });

  it("requests ask an index for its dimensions once, not before every search", async () => {
    const first = new FakeVectorize(DIMS);
    const overrides = deployment(first, new FakeVectorize(DIMS));
    const t = await (await createTenant(overrides, { name: "searcher", vector_index: "VECTORIZE" })).json<{
      tenant_id: string;
    }>();
    const { apiKey } = await newKey(t.tenant_id);
    await storeEmbedded(overrides, t.tenant_id, apiKey, ["Bees overwinter as a cluster around the queen."]);
    const described = () => first.calls.filter((c) => c.method === "describe").length;
    const before = described();
    for (let i = 0; i < 3; i++)
      expect(await vectorSearch(overrides, apiKey, "bees cluster around the queen")).toEqual([
        "Bees overwinter as a cluster around the queen.",
      ]);
    expect(first.calls.filter((c) => c.method === "query")).toHaveLength(3);
    expect(described() - before).toBe(0); // the embed job checked it already, in this isolate
  });

  it("reconciliation finds a tenant's lost and orphaned vectors in its own index, and touches no other", async () => {
    const [first, second] = [new FakeVectorize(DIMS), new FakeVectorize(DIMS)];
    const overrides = deployment(first, second);
    const t = await (await createTenant(overrides, { name: "drifting", vector_index: "VECTORIZE_1" })).json<{
      tenant_id: string;
      shard: string;
    }>();
    const { apiKey } = await newKey(t.tenant_id);
    await storeEmbedded(overrides, t.tenant_id, apiKey, ["Swallows leave in September.", "Swifts leave in August."]);
    const [kept, lostId] = idsOf(second, t.tenant_id).sort();
    second.vectors.delete(lostId!);
    const orphan = 999_999_999;
    await new VectorizeVectorIndex(second as unknown as Vectorize, DIMS, shardDatabase(env, t.shard)).upsert(
      t.tenant_id,
      [
        {
          chunkId: orphan,
          itemId: "gone",
          project: "default",
          kind: "memory",
          type: "note",
          values: new Float32Array(DIMS).fill(0.1),
        },
      ],
    );
    // Embedded an hour ago, so the pass does not wait for the index to show them (writes show up late).
    await shardDatabase(env, t.shard)
      .prepare("UPDATE items SET embedded_at = ? WHERE tenant_id = ?")
      .bind(Date.now() - 3_600_000, t.tenant_id)
      .run();

    const lost = lostQueue();
    const response = await fetchWith({ ...overrides, JOBS: lost.binding }, `/admin/reconcile?tenant=${t.tenant_id}`, {
      method: "POST",
      token: ADMIN_TOKEN,
    });
    expect(await response.json()).toMatchObject({ missing_vectors_requeued: 1, orphan_vectors_deleted: 1 });
    expect(idsOf(second, t.tenant_id)).toEqual([kept]);
    expect(lost.sent.filter((m) => m.type === "embed")).toHaveLength(1);
    expect(first.calls.filter((c) => c.method !== "describe")).toEqual([]);
  });

  it("a page of ids to reconcile reads its tenants' indexes in one control query, not one a tenant", async () => {
    const overrides = deployment(new FakeVectorize(DIMS), new FakeVectorize(DIMS));
    const tenants: string[] = [];
    for (const name of ["page-a", "page-b", "page-c"]) {
      const t = await (await createTenant(overrides, { name, vector_index: "VECTORIZE_1", shard: "SHARD_0" })).json<{
        tenant_id: string;
      }>();
      await storeEmbedded(overrides, t.tenant_id, (await newKey(t.tenant_id)).apiKey, [
        `${name}: the ferry runs hourly.`,
      ]);
      tenants.push(t.tenant_id);
    }
    for (const tenantId of tenants) forgetRoutes({ tenantId }); // as in an isolate that has not served them
    const statements: string[] = [];
    const control = new Proxy(env.CONTROL, {
      get: (target, prop) => {
        if (prop === "prepare") return (sql: string) => (statements.push(sql), target.prepare(sql));
        const value = Reflect.get(target, prop);
        return typeof value === "function" ? value.bind(target) : value;
      },
    });
    const { services } = openShard({ ...env, ...overrides, CONTROL: control } as Env, "SHARD_0", noWait);
    const page = await services.vectors.listIds({ afterChunkId: 0, limit: 1000 });
    for (const tenantId of tenants) {
      const mine = page.filter((v) => v.tenantId === tenantId).map((v) => v.chunkId);
      expect(mine).toHaveLength(1);
      expect((await services.vectors.getVectors(tenantId, mine)).size).toBe(1);
    }
    expect(statements.filter((sql) => sql.includes("vector_index"))).toHaveLength(1);
  });

  it("placement: room first, then the fewest vectors, then the fewest tenants, then the first index", () => {
    const fill = (name: string, vectors: number, tenants: number) => ({ name, vectors, tenants });
    expect(chooseVectorIndex([fill("VECTORIZE", 900, 1), fill("VECTORIZE_1", 100, 9)])).toBe("VECTORIZE_1");
    expect(chooseVectorIndex([fill("VECTORIZE", 100, 3), fill("VECTORIZE_1", 100, 2)])).toBe("VECTORIZE_1");
    expect(chooseVectorIndex([fill("VECTORIZE", 100, 2), fill("VECTORIZE_1", 100, 2)])).toBe("VECTORIZE");
    expect(chooseVectorIndex([fill("VECTORIZE", 0, 50_000), fill("VECTORIZE_1", 9_999_999, 0)])).toBe("VECTORIZE_1");
    expect(() => chooseVectorIndex([fill("VECTORIZE", 0, 50_000), fill("VECTORIZE_1", 10_000_000, 0)])).toThrow(
      /Every Vectorize index is full/,
    );
  });
});
