import { createExecutionContext, createScheduledController, waitOnExecutionContext } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { VectorizeVectorIndex } from "../src/adapters/vectorize-index";
import worker from "../src/index";
import { FakeVectorize } from "./fakes/fake-vectorize";
import { admin, call, newTenant, type TestTenant, waitForEmbeddings } from "./helpers";
import { adminWith, chunkIdsOf, deliverJobs, lostQueue } from "./ownership-fixtures";

const DIMS = 256;
let orphanIds = 50_000_000;

async function tenantWithMemories(count: number): Promise<TestTenant & { itemIds: string[]; chunkIds: number[] }> {
  const t = await newTenant();
  const stored = await call(t.apiKey, "memory_batch_store", {
    memories: Array.from({ length: count }, (_, i) => ({ content: `reconcile record ${i} of ${t.tenantId}` })),
  });
  await waitForEmbeddings(t.tenantId);
  return { ...t, itemIds: stored.ids, chunkIds: await chunkIdsOf(t.tenantId) };
}

/** Embedded long enough ago to be judged (RECONCILE_GRACE_MS). */
const age = ({ tenantId, db }: TestTenant) =>
  db
    .prepare("UPDATE items SET embedded_at = ? WHERE tenant_id = ?")
    .bind(Date.now() - 3_600_000, tenantId)
    .run();
const localIds = async ({ tenantId, db }: TestTenant) =>
  (
    await db
      .prepare("SELECT chunk_id FROM local_vectors WHERE tenant_id = ? ORDER BY chunk_id")
      .bind(tenantId)
      .all<{ chunk_id: number }>()
  ).results.map((r) => r.chunk_id);

/** Drift both ways in the local index: one chunk loses its vector, one vector has no chunk. */
async function injectLocalDrift(
  { tenantId, db }: TestTenant,
  chunkIds: number[],
): Promise<{ missing: number; orphan: number }> {
  const missing = chunkIds[0]!;
  const orphan = ++orphanIds;
  await db.batch([
    db
      .prepare(
        "INSERT INTO local_vectors (tenant_id, chunk_id, item_id, project, kind, type, vector) SELECT tenant_id, ?, 'gone', project, kind, type, vector FROM local_vectors WHERE tenant_id = ? AND chunk_id = ?",
      )
      .bind(orphan, tenantId, missing),
    db.prepare("DELETE FROM local_vectors WHERE tenant_id = ? AND chunk_id = ?").bind(tenantId, missing),
  ]);
  return { missing, orphan };
}

describe("POST /admin/reconcile (local vector index)", () => {
  it("re-queues chunks without vectors and deletes vectors without chunks, for the tenant asked only", async () => {
    const one = await tenantWithMemories(3);
    const two = await tenantWithMemories(2);
    await age(one);
    await age(two);
    const driftOne = await injectLocalDrift(one, one.chunkIds);
    const driftTwo = await injectLocalDrift(two, two.chunkIds);

    const response = await admin("POST", `/reconcile?tenant=${one.tenantId}`);
    expect(response.status).toBe(200);
    expect(await response.json()).toEqual({
      checked: 4,
      missing_vectors_requeued: 1,
      orphan_vectors_deleted: 1,
      unjudged: 0,
      next_cursor: null,
    });
    await waitForEmbeddings(one.tenantId);
    expect(await localIds(one)).toEqual(one.chunkIds);
    // The other tenant's drift is its own until it is reconciled.
    expect(await localIds(two)).toEqual(
      [...two.chunkIds.filter((id) => id !== driftTwo.missing), driftTwo.orphan].sort((a, b) => a - b),
    );
    expect(driftOne.orphan).toBeGreaterThan(0);

    // Nothing left to repair.
    expect(await (await admin("POST", `/reconcile?tenant=${one.tenantId}`)).json()).toMatchObject({
      missing_vectors_requeued: 0,
      orphan_vectors_deleted: 0,
    });

    // Bounded runs: a cursor walks the rest, and the counts add up to one whole pass.
    const totals = { checked: 0, missing_vectors_requeued: 0, orphan_vectors_deleted: 0 };
    let cursor: number | null = 0;
    let runs = 0;
    while (cursor !== null) {
      const report: any = await (
        await admin("POST", `/reconcile?tenant=${two.tenantId}&limit=1&cursor=${cursor}`)
      ).json();
      expect(report.checked).toBeLessThanOrEqual(1);
      for (const key of Object.keys(totals) as (keyof typeof totals)[]) totals[key] += report[key];
      cursor = report.next_cursor;
      runs++;
    }
    expect(runs).toBeGreaterThan(1);
    expect(totals).toEqual({ checked: 3, missing_vectors_requeued: 1, orphan_vectors_deleted: 1 });
    await waitForEmbeddings(two.tenantId);
    expect(await localIds(two)).toEqual(two.chunkIds);
  }, 60_000);

  it("leaves just-embedded chunks alone (vector writes show up late) and refuses bad input", async () => {
    const t = await tenantWithMemories(2);
    await t.db
      .prepare("DELETE FROM local_vectors WHERE tenant_id = ? AND chunk_id = ?")
      .bind(t.tenantId, t.chunkIds[0])
      .run();
    expect(await (await admin("POST", `/reconcile?tenant=${t.tenantId}`)).json()).toMatchObject({
      checked: 2,
      missing_vectors_requeued: 0,
      unjudged: 2,
    });

    for (const [query, parameter] of [
      ["limit=0", "limit"],
      ["limit=1001", "limit"],
      ["cursor=-1", "cursor"],
      ["cursor=abc", "cursor"],
      ["", "shard"],
      ["shard=SHARD_9", "shard"],
      ["shard=CONTROL", "shard"],
    ] as const) {
      const bad = await admin("POST", `/reconcile?${query}`);
      expect(bad.status, query).toBe(400);
      expect(await bad.json()).toMatchObject({ error: { code: "INVALID_PARAMETER", details: { parameter } } });
    }
    const elsewhere = t.shard === "SHARD_0" ? "SHARD_1" : "SHARD_0";
    const mismatch = await admin("POST", `/reconcile?tenant=${t.tenantId}&shard=${elsewhere}`);
    expect(mismatch.status).toBe(400);
    expect(await mismatch.json()).toMatchObject({
      error: { code: "INVALID_PARAMETER", details: { parameter: "shard" } },
    });
    expect((await admin("POST", "/reconcile?tenant=tn_nobody")).status).toBe(404);
    const tenantAdmin = await newTenant({ scopes: ["read", "write", "admin"] });
    expect(
      (await admin("POST", `/reconcile?tenant=${tenantAdmin.tenantId}`, undefined, tenantAdmin.apiKey)).status,
    ).toBe(403);
  }, 30_000);
});

describe("reconciliation and deletion against Vectorize (an in-test fake of the binding)", () => {
  async function embedInto(fake: FakeVectorize, t: { tenantId: string; itemIds: string[] }) {
    await deliverJobs([{ type: "embed", tenantId: t.tenantId, itemIds: t.itemIds }], {
      VECTOR_INDEX: "vectorize",
      VECTORIZE: fake as unknown as Vectorize,
    });
  }
  const ledger = async ({ tenantId, db }: TestTenant) =>
    (
      await db
        .prepare("SELECT chunk_id FROM vector_ids WHERE tenant_id = ? ORDER BY chunk_id")
        .bind(tenantId)
        .all<{ chunk_id: number }>()
    ).results.map((r) => r.chunk_id);
  const fakeIds = (fake: FakeVectorize, tenantId: string) =>
    [...fake.vectors.keys()]
      .filter((id) => id.startsWith(`${tenantId}:`))
      .map((id) => Number(id.slice(tenantId.length + 1)))
      .sort((a, b) => a - b);

  it("finds lost vectors with getByIds and orphans through the D1 record of written ids, by route and by cron", async () => {
    const fake = new FakeVectorize(DIMS);
    const overrides = { VECTOR_INDEX: "vectorize", VECTORIZE: fake as unknown as Vectorize };
    const t = await tenantWithMemories(3);
    await embedInto(fake, t);
    expect(fakeIds(fake, t.tenantId)).toEqual(t.chunkIds);
    expect(await ledger(t)).toEqual(t.chunkIds);
    await age(t);

    // Drift: Vectorize lost one vector; another stayed behind when its chunk went.
    const index = new VectorizeVectorIndex(fake as unknown as Vectorize, DIMS, t.db);
    fake.vectors.delete(`${t.tenantId}:${t.chunkIds[1]}`);
    const orphan = ++orphanIds;
    await index.upsert(t.tenantId, [
      {
        chunkId: orphan,
        itemId: "gone",
        project: "default",
        kind: "memory",
        type: "note",
        values: new Float32Array(DIMS).fill(0.1),
      },
    ]);

    const lost = lostQueue();
    const response = await adminWith({ ...overrides, JOBS: lost.binding }, "POST", `/reconcile?tenant=${t.tenantId}`);
    expect(await response.json()).toEqual({
      checked: 4,
      missing_vectors_requeued: 1,
      orphan_vectors_deleted: 1,
      unjudged: 0,
      next_cursor: null,
    });
    expect(fake.vectors.has(`${t.tenantId}:${orphan}`)).toBe(false);
    expect(await ledger(t)).toEqual(t.chunkIds);
    const item = await t.db
      .prepare("SELECT item_id FROM chunks WHERE id = ?")
      .bind(t.chunkIds[1])
      .first<{ item_id: string }>();
    expect(lost.sent).toEqual([{ type: "embed", tenantId: t.tenantId, itemIds: [item!.item_id] }]);
    await deliverJobs(lost.sent, overrides);
    expect(fakeIds(fake, t.tenantId)).toEqual(t.chunkIds);

    // The cron runs the same pass over every tenant from its stored cursor.
    const cronOrphan = ++orphanIds;
    await index.upsert(t.tenantId, [
      {
        chunkId: cronOrphan,
        itemId: "gone",
        project: "default",
        kind: "memory",
        type: "note",
        values: new Float32Array(DIMS).fill(0.2),
      },
    ]);
    await t.db.prepare("DELETE FROM reconcile_state").run();
    const ctx = createExecutionContext();
    await worker.scheduled(
      createScheduledController({ cron: "*/15 * * * *" }),
      { ...env, ...overrides, JOBS: lostQueue().binding },
      ctx,
    );
    await waitOnExecutionContext(ctx);
    expect(fake.vectors.has(`${t.tenantId}:${cronOrphan}`)).toBe(false);
    expect(await t.db.prepare("SELECT cursor FROM reconcile_state WHERE id = 1").first("cursor")).not.toBeNull();
  }, 60_000);

  it("tenant deletion deletes the tenant's Vectorize vectors, orphans included, and no other tenant's", async () => {
    const fake = new FakeVectorize(DIMS);
    const overrides = { VECTOR_INDEX: "vectorize", VECTORIZE: fake as unknown as Vectorize };
    const doomed = await tenantWithMemories(3);
    const kept = await tenantWithMemories(2);
    await embedInto(fake, doomed);
    await embedInto(fake, kept);
    const index = new VectorizeVectorIndex(fake as unknown as Vectorize, DIMS, doomed.db);
    await index.upsert(doomed.tenantId, [
      {
        chunkId: ++orphanIds,
        itemId: "gone",
        project: "default",
        kind: "memory",
        type: "note",
        values: new Float32Array(DIMS).fill(0.3),
      },
    ]);
    expect(fakeIds(fake, doomed.tenantId)).toHaveLength(4);

    let lost = lostQueue();
    expect(
      (await adminWith({ ...overrides, JOBS: lost.binding }, "DELETE", `/tenants/${doomed.tenantId}`)).status,
    ).toBe(202);
    for (let round = 0; lost.sent.length > 0 && round < 10; round++) {
      const next = lostQueue();
      await deliverJobs(
        lost.sent.filter((m) => m.type === "delete"),
        { ...overrides, JOBS: next.binding },
      );
      lost = next;
    }
    expect(
      await env.CONTROL.prepare("SELECT COUNT(*) AS n FROM tenants WHERE id = ?").bind(doomed.tenantId).first("n"),
    ).toBe(0);
    expect(fakeIds(fake, doomed.tenantId)).toEqual([]);
    expect(await ledger(doomed)).toEqual([]);
    expect(fakeIds(fake, kept.tenantId)).toEqual(kept.chunkIds);
    expect(await ledger(kept)).toEqual(kept.chunkIds);
  }, 60_000);
});
