// Capacity: what one D1 shard carries, and a load run across shards.
// 1. Per tool, from the worker's own usage log: D1 round trips, D1 wait and the worker's own time.
// 2. The model: D1 runs one query at a time per database, so a shard is busy for a call's D1 time and serves
//    1000 / (D1 ms per call) calls a second; shards add up (each is its own database), the control database is
//    read only by cold isolates (a key's route is cached 15 s), and the usage log costs one statement per
//    queue batch of up to 100 requests.
// 3. A load run: CLIENTS concurrent clients over tenants on every shard, a mix of writes and searches; every
//    acknowledged write is then looked up, and the calls the usage log counted are compared with those made.
// Reads ../shared/data (MS MARCO passages) for realistic text.
import { measureTools } from "./calls.mjs";
import { loadMsmarco } from "./data.mjs";
import { fmt, percentile } from "./metrics.mjs";
import { admin, BASE } from "./worker.mjs";

const CLIENTS = 50;
const TENANTS = 10;
const CALLS_PER_CLIENT = 40;
const SHARD_COUNTS = [1, 4, 16, 64];
/** A queue's throughput (Queues limits): the usage log sends a message a request, a write queues two jobs (embed, link). */
const QUEUE_MESSAGES_PER_SECOND = 5000;
const WRITE_TOOLS = ["log_chat", "memory_store"];
/**
 * Workers AI's default for Text Embeddings (per account): a search or context build embeds its query; under load a
 * queue batch's writes, of any tenants, share calls of up to 32 texts (src/jobs/shared-embeddings.ts).
 */
const EMBEDDING_CALLS_PER_SECOND = 3000 / 60;
const QUERY_EMBEDDING_TOOLS = ["search", "memory_context_build"];
const TEXTS_PER_EMBEDDING_CALL = 32;
/** A hosted agent's day, by calls: mostly logging turns and searching, some context builds and stores. */
const MIX = {
  log_chat: 0.3,
  search: 0.3,
  memory_context_build: 0.1,
  memory_store: 0.1,
  get_context: 0.1,
  retrieve_context: 0.1,
};

export async function runCapacity(newTenant) {
  // The load run's tenants, spread over every shard before the 1,000-memory tenant below fills one of them.
  const tenants = [];
  for (let i = 0; i < TENANTS; i++) tenants.push(await newTenant(`capacity-${i}`));
  await spreadOverShards(tenants);
  const rows = await measureTools(newTenant);
  const lines = [
    "Capacity of one D1 shard, from each tool's D1 time inside the worker (40 calls each over 1,000 memories)",
    `  ${"tool".padEnd(22)} ${"server p50".padStart(10)} ${"D1 trips".padStart(9)} ${"D1 ms".padStart(7)} ${"worker p50".padStart(11)} ${"calls/s per shard".padStart(18)}`,
  ];
  for (const r of rows) {
    lines.push(
      `  ${r.tool.padEnd(22)} ${fmt(r.p50_ms, 1).padStart(10)} ${fmt(r.d1_round_trips, 2).padStart(9)} ${fmt(r.d1_ms, 2).padStart(7)} ${fmt(r.worker_p50_ms, 1).padStart(11)} ${(r.d1_ms > 0 ? fmt(1000 / r.d1_ms, 0) : "no D1").padStart(18)}`,
    );
  }
  const byTool = new Map(rows.map((r) => [r.tool, r]));
  const mixMs = Object.entries(MIX).reduce((sum, [tool, share]) => sum + share * byTool.get(tool).d1_ms, 0);
  const perShard = 1000 / mixMs;
  lines.push(
    `  an agent mix (${Object.entries(MIX)
      .map(([t, s]) => `${t} ${s * 100}%`)
      .join(", ")}): ${fmt(mixMs, 2)} ms of D1 a call`,
  );
  lines.push(
    `  D1 runs one query at a time per database, so a shard serves ~${fmt(perShard, 0)} calls/s of that mix (search alone: ${fmt(1000 / byTool.get("search").d1_ms, 0)}/s)`,
  );
  lines.push(
    `  ${SHARD_COUNTS.map((n) => `${n} shard${n > 1 ? "s" : ""}: ${fmt(perShard * n, 0)} calls/s, ${n * 10} GB`).join("; ")}`,
  );
  const writeShare = WRITE_TOOLS.reduce((sum, tool) => sum + (MIX[tool] ?? 0), 0);
  const queuesFor = (n) =>
    `${Math.ceil((perShard * n) / QUEUE_MESSAGES_PER_SECOND)} usage / ${Math.ceil((perShard * n * writeShare * 2) / QUEUE_MESSAGES_PER_SECOND)} job`;
  lines.push(
    `  queues those need at 5,000 messages/s each (a message a request, two jobs a write): ${SHARD_COUNTS.map((n) => `${n}: ${queuesFor(n)}`).join("; ")}`,
  );
  const embeddingCalls =
    QUERY_EMBEDDING_TOOLS.reduce((sum, tool) => sum + (MIX[tool] ?? 0), 0) + writeShare / TEXTS_PER_EMBEDDING_CALL;
  lines.push(
    `  Workers AI's default 3,000 embedding requests/minute (${fmt(embeddingCalls, 3)} a call of the mix) caps it near ${fmt(EMBEDDING_CALLS_PER_SECOND / embeddingCalls, 0)} calls/s ` +
      "for the whole account with vectors; past that, searches answer from keywords (degraded)",
  );
  lines.push(
    "  (locally a D1 wait includes the loopback trip to the database object, so this errs low; the control database is",
  );
  lines.push(
    "   read once per key per isolate per 15 s and the usage log writes one statement per queue batch of up to 100 requests)",
  );
  lines.push(...(await loadRun(tenants)));
  return lines;
}

/**
 * Placement puts new tenants on the emptiest shard, so after a suite that filled one shard they all land on the
 * other: the tenants are spread over every shard by moving them (POST /admin/tenants/:id/move), as an operator
 * rebalances. A move's switch comes before its purge, so a tenant works on its new shard as soon as it switched.
 */
async function spreadOverShards(tenants) {
  const shards = (await admin("GET", "/shards")).shards.map((s) => s.shard);
  for (const [i, tenant] of tenants.entries()) {
    const want = shards[i % shards.length];
    if (tenant.shard === want) continue;
    await admin("POST", `/tenants/${tenant.id}/move`, { shard: want });
    for (;;) {
      const shown = await admin("GET", `/tenants/${tenant.id}`);
      if (shown.shard === want) break;
      if (shown.move?.state === "failed") throw new Error(`move of ${tenant.id} failed: ${shown.move.error}`);
      await new Promise((r) => setTimeout(r, 100));
    }
    tenant.shard = want;
  }
}

/** CLIENTS clients, each with its own key, writing and searching on tenants spread over the shards. */
async function loadRun(tenants) {
  const { corpus, queries } = loadMsmarco();
  const shards = new Set(tenants.map((t) => t.shard));
  const clients = await Promise.all(
    Array.from({ length: CLIENTS }, async (_, i) => ({
      tenant: tenants[i % TENANTS],
      key: await tenants[i % TENANTS].newKey(),
    })),
  );
  const acknowledged = new Map(tenants.map((t) => [t.id, []]));
  const made = new Map(tenants.map((t) => [t.id, 0]));
  const latency = [];
  const errors = [];
  const started = performance.now();
  await Promise.all(
    clients.map(async ({ tenant, key }, c) => {
      for (let n = 0; n < CALLS_PER_CLIENT; n++) {
        const write = n % 5 < 2;
        const args = write
          ? {
              content: `${corpus[(c * CALLS_PER_CLIENT + n) % corpus.length].text} [client ${c} call ${n}]`,
              namespace: "load",
            }
          : { query: queries[(c + n) % queries.length].text, project: "load" };
        const tool = write ? "memory_store" : "search";
        const t0 = performance.now();
        try {
          const response = await fetch(`${BASE}/jsonrpc`, {
            method: "POST",
            headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
            body: JSON.stringify({
              jsonrpc: "2.0",
              id: n,
              method: "tools/call",
              params: { name: tool, arguments: args },
            }),
          });
          const body = await response.json();
          latency.push(performance.now() - t0);
          made.set(tenant.id, made.get(tenant.id) + 1);
          if (body.error) errors.push(`${tool}: ${body.error.message}`);
          else if (write) acknowledged.get(tenant.id).push(body.result.id);
        } catch (error) {
          errors.push(`${tool}: ${error.message}`);
        }
      }
    }),
  );
  const seconds = (performance.now() - started) / 1000;
  // Every acknowledged write, looked up by id (memory_get, a batch of 50 at a time); the calls counted.
  let found = 0;
  let counted = 0;
  let expected = 0;
  for (const tenant of tenants) {
    const ids = acknowledged.get(tenant.id);
    const got = await tenant.callMany(ids.map((id) => ["memory_get", { id }]));
    found += got.filter((r, i) => r.id === ids[i]).length;
    expected += made.get(tenant.id) + ids.length;
  }
  const deadline = Date.now() + 30_000;
  for (;;) {
    counted = 0;
    for (const tenant of tenants) counted += (await tenant.stats()).tool_calls;
    if (counted >= expected || Date.now() > deadline) break;
    await new Promise((r) => setTimeout(r, 250));
  }
  const writes = [...acknowledged.values()].reduce((a, b) => a + b.length, 0);
  const placed = await Promise.all(tenants.map((t) => admin("GET", `/tenants/${t.id}`)));
  const perShard = [...shards].map((s) => `${s}: ${placed.filter((p) => p.shard === s).length} tenants`).join(", ");
  return [
    `Load: ${CLIENTS} clients (own keys) over ${TENANTS} tenants on ${shards.size} shards (${perShard}), ${CALLS_PER_CLIENT} calls each, 40% memory_store / 60% search`,
    `  ${fmt(latency.length / seconds, 1)} requests/s; client latency p50 ${fmt(percentile(latency, 50), 0)} ms, p95 ${fmt(percentile(latency, 95), 0)} ms; errors ${errors.length}${errors.length > 0 ? ` (first: ${errors[0]})` : ""}`,
    `  acknowledged writes ${writes}, found afterwards ${found}; calls made ${expected}, counted by the usage log ${counted}`,
  ];
}
