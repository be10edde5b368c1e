// `npm run bench -- cost`: what each operation costs on Cloudflare's price list. A tenant is filled to each size
// (LoCoMo turns and MS MARCO passages from ../shared/data), then each operation runs alone and its billable units are
// the difference in what the worker recorded (usage_hours: D1's own meta per statement, KV, queue messages, neurons;
// the scheduled passes' writes included), read from the bench server's local D1. Printed: the units per operation,
// how many fit in a Free plan day (and the allowance that binds), and the $ per million on Paid. Then an idle hour of
// the scheduled passes on each shard (idle-hour.mjs).

import { freePlanCapacity, limitName, paidUsdPerMillion, planUnits, UNIT_COLUMNS } from "./cost-model.mjs";
import { loadLocomo, loadMsmarco } from "./data.mjs";
import { idleHourLines, measureIdleHour } from "./idle-hour.mjs";
import { jobsDone } from "./jobs-done.mjs";
import { localUsageUnits } from "./local-d1.mjs";
import { fmt } from "./metrics.mjs";
import { ADMIN_TOKEN, admin, BASE, dispatchMode, INSPECTOR_URL, sleep, startWorker } from "./worker.mjs";
import { profileWorker } from "./worker-cpu.mjs";

const SIZES = (process.env.COST_SIZES ?? "1000,10000,100000").split(",").map(Number);

export async function runCost(newTenant, { release }) {
  // Production's configuration: extraction on (the offline stand-in for the model) and the deployment's JOB_DISPATCH
  // (per-minute unless the environment names another). No wall-clock crons: the bench fires the minute pass where a
  // minute would have passed (jobsDone), so no pass lands inside another operation's measurement.
  await release();
  let worker = await startWorker({ vars: { LLM: "local" }, crons: false });
  try {
    const data = benchData();
    const measured = await measureCost(newTenant, data, SIZES);
    const mode = dispatchMode();
    const other = mode === "per-minute" ? "per-write" : "per-minute";
    // The other dispatch's writes, beside, on the largest tenant (reads do not depend on it).
    await worker.stop();
    worker = await startWorker({ fresh: false, vars: { LLM: "local", JOB_DISPATCH: other }, crons: false });
    const last = measured.at(-1);
    const beside = await measureWrites({ ...last.tenant, operations: [] }, data, COUNTS, last.size, `, ${other}`);
    // The idle hour on the same state, by a worker that fires no crons on its own (run.mjs starts afresh after).
    return [
      `Queue dispatch: JOB_DISPATCH=${mode}; memory extraction on (LLM=local, the offline stand-in)`,
      ...costLines(measured),
      ...besideLines(other, beside),
      ...idleHourLines(await measureIdleHour()),
    ];
  } finally {
    await worker.stop();
  }
}

/** The bench's data: LoCoMo's turns (log_chat arguments), MS MARCO's passages and the questions of both. */
export function benchData() {
  const turns = [];
  const questions = [];
  for (const sample of loadLocomo()) {
    const c = sample.conversation;
    for (let n = 1; c[`session_${n}`]; n++)
      for (const turn of c[`session_${n}`])
        turns.push({
          conversation_id: `${sample.sample_id}:session_${n}`,
          role: turn.speaker === c.speaker_a ? "user" : "assistant",
          agent_name: turn.speaker,
          content: turn.text,
          project_id: sample.sample_id,
        });
    questions.push(...sample.qa.map((q) => q.question));
  }
  const { corpus, queries } = loadMsmarco();
  questions.push(...queries.slice(0, 100).map((q) => q.text));
  return { turns, docs: corpus.map((d) => d.text), questions };
}

/** How many of each operation run per measurement (small, so the 1k size stays quick; means over them). */
const COUNTS = {
  turn: 40,
  spacedTurns: 10,
  minuteTurns: 21,
  batchedTurns: 100,
  store: 40,
  batch: 3,
  search: 40,
  context: 20,
  around: 20,
};

/**
 * Fills a tenant to each size and measures every operation there: {size, items, operations: [{name, per, count,
 * requests, units, parts}]}. `data`: {turns, docs, questions} (benchData, or made-up text in a test).
 */
export async function measureCost(newTenant, data, sizes, counts = COUNTS) {
  const results = [];
  for (const size of sizes) {
    const tenant = await newTenant(`cost-${size}`);
    const usage = localUsageUnits(tenant.id, UNIT_COLUMNS);
    await fillTenant(tenant, data, size);
    await settled(tenant, usage);
    const measuring = { tenant, usage, operations: [] };
    await measureWrites(measuring, data, counts, size);
    const { measure } = measurer(measuring);
    const questions = (n) => Array.from({ length: n }, (_, i) => data.questions[i % data.questions.length]);
    const hits = [];
    await measure("search", "search", counts.search, counts.search, async () => {
      for (const query of questions(counts.search)) {
        const { result } = await tenant.call("search", { query, limit: 10 });
        if (result.results.length > 0) hits.push(result.results[0].chunk_id);
      }
    });
    await measure("memory_context_build (2,000 tokens)", "context", counts.context, counts.context, async () => {
      for (const query of questions(counts.context))
        await tenant.call("memory_context_build", { query, token_budget: 2000 });
    });
    const around = hits.slice(0, counts.around);
    if (around.length > 0)
      await measure("get_context (count 3)", "call", around.length, around.length, async () => {
        for (const chunkId of around) await tenant.call("get_context", { chunk_id: chunkId, count: 3 });
      });
    const items = (await tenant.stats()).items;
    await measure("export", "1k items", items / 1000, 1, async () => {
      const response = await fetch(`${BASE}/admin/tenants/${tenant.id}/export`, {
        headers: { authorization: `Bearer ${ADMIN_TOKEN}` },
      });
      if (!response.ok) throw new Error(`export: ${response.status}`);
      await response.text();
    });
    await measure(
      "tenant move",
      "1k items",
      items / 1000,
      1,
      async () => {
        const target = (await admin("GET", "/shards")).shards.map((s) => s.shard).find((s) => s !== tenant.shard);
        if (!target) throw new Error("the cost bench needs two shards to move a tenant");
        await admin("POST", `/tenants/${tenant.id}/move`, { shard: target });
        await untilMoved(tenant.id, target);
        tenant.shard = target;
      },
      true,
    );
    // `tenant`: what measuring it again needs (runCost measures the other dispatch's writes on the largest).
    results.push({ size, items, operations: measuring.operations, tenant: measuring });
  }
  return results;
}

/**
 * `measure(name, per, count, requests, run, jobsInRun)`: one operation's units over `count` runs, each a share of
 * `requests` requests; `jobsInRun` where `run` itself waits for the jobs (its calls' CPU is then not apart).
 */
function measurer(measuring) {
  const { tenant, usage, operations } = measuring;
  return {
    measure: async (name, per, count, requests, run, jobsInRun = false) => {
      const before = await usage();
      // The worker's CPU while the calls ran, then while their jobs and passes did (settled drives those).
      const calls = await profileWorker(INSPECTOR_URL);
      await run();
      const callsMs = await calls.stop();
      const jobs = await profileWorker(INSPECTOR_URL);
      const after = await settled(tenant, usage, before);
      const jobsMs = await jobs.stop();
      const cpu = { calls: jobsInRun ? null : callsMs / count, total: (callsMs + jobsMs) / count };
      operations.push({ name, per, count, requests: requests / count, cpu, ...difference(before, after, count) });
    },
  };
}

/**
 * The write operations, measured on a filled tenant ({tenant, usage, operations}); returns its operations. `round`
 * makes the texts new when the same tenant is measured again (identical memories are not stored twice).
 */
export async function measureWrites(measuring, data, counts, size = 0, round = "") {
  const { tenant } = measuring;
  const { measure } = measurer(measuring);
  const turn = (i, conversation) => ({
    conversation_id: `${conversation}${round}`,
    role: i % 2 === 0 ? "user" : "assistant",
    content: `${data.turns[i % data.turns.length].content} (turn ${i} of the cost bench${round})`,
    project_id: "cost",
  });
  await measure("log_chat, one turn a request, jobs included", "turn", counts.turn, counts.turn, async () => {
    for (let i = 0; i < counts.turn; i++) await tenant.call("log_chat", turn(i, "cost-single"));
  });
  // As an agent logs a conversation, a turn every few seconds: each turn's jobs run (and are logged) on their own.
  await measure(
    "log_chat, one turn a request, jobs done before the next",
    "turn",
    counts.spacedTurns,
    counts.spacedTurns,
    async () => {
      for (let i = 0; i < counts.spacedTurns; i++) {
        await tenant.call("log_chat", turn(i, "cost-spaced"));
        await jobsDone(tenant);
      }
    },
    true,
  );
  // 10,000 turns a day spread evenly: about 7 a minute, then the minute pass sends their jobs (per write, each turn's
  // jobs come with it).
  await measure(
    "log_chat, 7 turns a minute (10,000 a day), jobs included",
    "turn",
    counts.minuteTurns,
    counts.minuteTurns,
    async () => {
      for (let i = 0; i < counts.minuteTurns; i++) {
        await tenant.call("log_chat", turn(i, "cost-minutes"));
        if ((i + 1) % 7 === 0 || i === counts.minuteTurns - 1) await jobsDone(tenant);
      }
    },
    true,
  );
  const batched = Array.from({ length: counts.batchedTurns }, (_, i) => ["log_chat", turn(i, `cost-batch-${i % 5}`)]);
  await measure(
    "log_chat, turns in JSON-RPC batches of 50",
    "turn",
    counts.batchedTurns,
    Math.ceil(counts.batchedTurns / 50),
    () => tenant.callMany(batched),
  );
  await measure("memory_store, one memory", "memory", counts.store, counts.store, async () => {
    for (let i = 0; i < counts.store; i++)
      await tenant.call("memory_store", {
        content: `${docText(data.docs, size + i)} (stored alone${round})`,
        namespace: "cost",
      });
  });
  await measure("memory_batch_store of 100", "batch", counts.batch, counts.batch, async () => {
    for (let b = 0; b < counts.batch; b++) {
      const memories = Array.from({ length: 100 }, (_, k) => ({
        content: `${docText(data.docs, size + 1000 + b * 100 + k)} (batch ${b}${round})`,
      }));
      await tenant.call("memory_batch_store", { namespace: "cost", memories });
    }
  });
  return measuring.operations;
}

/** Fills a tenant to `size` items: LoCoMo's turns (half, as far as they go), then documents. */
async function fillTenant(tenant, data, size) {
  const fillTurns = Math.min(Math.floor(size / 2), data.turns.length);
  await tenant.callMany(data.turns.slice(0, fillTurns).map((args) => ["log_chat", args]));
  for (let i = 0; i < size - fillTurns; i += 100) {
    const n = Math.min(100, size - fillTurns - i);
    const memories = Array.from({ length: n }, (_, k) => ({ content: docText(data.docs, i + k) }));
    await tenant.call("memory_batch_store", { namespace: "docs", memories });
  }
}

/**
 * `npm run bench -- fill`: a tenant filled as the cost bench fills one (COST_SIZES' first size), settled, and left in
 * the bench's state for `npm run replay -- reads`.
 */
export async function runFill(newTenant) {
  const tenant = await newTenant(`cost-${SIZES[0]}`);
  await fillTenant(tenant, benchData(), SIZES[0]);
  await tenant.settle();
  await tenant.postingBlocks();
  return [`Filled tenant ${tenant.id} with ${SIZES[0].toLocaleString("en")} items, left in the bench's state`];
}

/**
 * The i-th document: the passages as they are, then new ones made of the first half of one passage and the second
 * half of another (pairs picked by a stride), so that a tenant of 100k holds distinct texts in the corpus's words,
 * not copies that would link to and crowd one another.
 */
function docText(docs, i) {
  const n = docs.length;
  if (i < n) return docs[i];
  const round = Math.floor(i / n);
  const [a, b] = [docs[i % n], docs[(i * 7919 + round * 104_729) % n]];
  const halfA = a.slice(0, a.indexOf(" ", a.length / 2) + 1 || a.length);
  const halfB = b.slice(b.indexOf(" ", b.length / 2) + 1);
  return `${halfA}${halfB}`;
}

/**
 * Waits until the tenant's jobs are done, the minute pass has nothing due, and the usage log has stopped growing (the
 * isolate's writes and the jobs' own records arrive up to a few seconds after); returns the units recorded then.
 */
export async function settled(tenant, usage, before) {
  await jobsDone(tenant);
  await tenant.postingBlocks();
  let last = await usage();
  let stillSince = Date.now();
  while (Date.now() - stillSince < 1_500) {
    await sleep(250);
    const now = await usage();
    if (JSON.stringify(now.calls) !== JSON.stringify(last.calls)) [last, stillSince] = [now, Date.now()];
  }
  if (before && JSON.stringify(last.calls) === JSON.stringify(before.calls)) throw new Error("nothing was logged");
  return last;
}

async function untilMoved(tenantId, shard) {
  for (let i = 0; i < 2400; i++) {
    const tenant = await admin("GET", `/tenants/${tenantId}`);
    if (tenant.move?.state === "failed") throw new Error(`move failed: ${tenant.move.error}`);
    if (tenant.shard === shard && tenant.move?.state === "done") return;
    await sleep(250);
  }
  throw new Error(`tenant ${tenantId} did not reach ${shard}`);
}

/**
 * The bench's own admin requests (a move's progress, the top postings' due count, the export's and the move's start)
 * are metered as `admin` work: not the operation's, so left out.
 */
export const OBSERVER_PARTS = ["job:admin", "shard:admin"];

/** The units per operation between two readings, in all and by part (the tool, each job kind, each pass). */
function difference(before, after, count) {
  const observed = (reading, c) => OBSERVER_PARTS.reduce((sum, key) => sum + (reading.parts[key]?.[c] ?? 0), 0);
  const spent = (reading, c) => reading.units[c] - observed(reading, c);
  const units = Object.fromEntries(UNIT_COLUMNS.map((c) => [c, (spent(after, c) - spent(before, c)) / count]));
  const parts = {};
  for (const [key, sums] of Object.entries(after.parts)) {
    if (OBSERVER_PARTS.includes(key)) continue;
    const was = before.parts[key];
    const rows = (sums.d1_rows_written - (was?.d1_rows_written ?? 0)) / count;
    const read = (sums.d1_rows_read - (was?.d1_rows_read ?? 0)) / count;
    if (rows > 0.005 || read > 0.005) parts[key] = { read, written: rows };
  }
  return { units, parts };
}

/** The printed table: per size, each operation's units, its Free plan capacity and its price on Paid; then the targets. */
export function costLines(measured) {
  const lines = [
    "Cost: billable units per operation (D1's own counts, recorded by the worker), on Cloudflare's price list",
  ];
  for (const { size, items, operations } of measured) {
    lines.push(`  ${size.toLocaleString("en")} items (${items.toLocaleString("en")} stored):`);
    lines.push(OPERATION_HEADER, ...operations.flatMap(operationLines));
  }
  lines.push(...targetLines(measured));
  return lines;
}

/** The other dispatch's write operations, on the largest tenant, printed beside (no target). */
function besideLines(mode, operations) {
  return [
    `  Writes with JOB_DISPATCH=${mode}, beside (no target):`,
    OPERATION_HEADER,
    ...operations.flatMap(operationLines),
  ];
}

const OPERATION_HEADER = `    ${"operation (per)".padEnd(52)} rows read  rows written  KV r/w/d/l   queue msgs  neurons  local rows w  Free plan a day (binds)          $ per M on Paid`;

/** An operation's line and, when it has several, its parts (the tool, each job kind, each pass). */
function operationLines(op) {
  const u = op.units;
  const plan = planUnits(u, op.requests);
  const free = freePlanCapacity(plan);
  const kv = [u.kv_reads, u.kv_writes, u.kv_deletes, u.kv_lists].map((v) => fmt(v, 2)).join("/");
  const lines = [
    `    ${`${op.name} (${op.per})`.padEnd(52)}${fmt(u.d1_rows_read, 1).padStart(9)}${fmt(u.d1_rows_written, 1).padStart(14)}  ${kv.padEnd(11)}${fmt(u.queue_sends, 2).padStart(11)}${fmt(u.ai_neurons, 1).padStart(9)}${fmt(u.local_rows_written, 1).padStart(14)}  ${`${free.perDay === Infinity ? "unbounded" : Math.floor(free.perDay).toLocaleString("en")} (${free.binding ? limitName(free.binding) : "-"})`.padEnd(33)}${fmt(paidUsdPerMillion(plan), 2).padStart(10)}`,
  ];
  const parts = Object.entries(op.parts)
    .sort((a, b) => b[1].written - a[1].written || b[1].read - a[1].read)
    .map(([key, p]) => `${key} ${fmt(p.read, 1)} read / ${fmt(p.written, 1)} written`);
  if (parts.length > 1) lines.push(`        by part: ${parts.join("; ")}`);
  if (op.cpu)
    lines.push(
      `        worker CPU (V8 samples, local): ${fmt(op.cpu.total, 1)} ms a ${op.per} with its jobs and passes` +
        (op.cpu.calls === null ? "" : `, ${fmt(op.cpu.calls, 1)} ms of it in the calls`),
    );
  return lines;
}

function targetLines(measured) {
  const op = (size, name) => measured.find((m) => m.size === size)?.operations.find((o) => o.name.startsWith(name));
  const lines = ["  Targets (issue 61):"];
  for (const [name, label] of [
    ["log_chat, 7 turns a minute", "7 a minute"],
    ["log_chat, one turn a request, jobs included", "in a burst"],
    ["log_chat, one turn a request, jobs done", "one at a time"],
  ]) {
    const turn = op(measured.at(-1).size, name);
    if (!turn) continue;
    const turns = freePlanCapacity(planUnits(turn.units, turn.requests));
    lines.push(
      `    logged turns a Free plan day (${label}), jobs included: ${Math.floor(turns.perDay).toLocaleString("en")} (${limitName(turns.binding)} binds; target ≥ 10,000); ` +
        `rows written per turn ${fmt(turn.units.d1_rows_written, 1)} (target ≤ 10); queue messages per turn ${fmt(turn.units.queue_sends, 2)} (target ≤ 0.3)`,
    );
  }
  const search10k = op(10_000, "search");
  const search100k = op(100_000, "search");
  if (search10k) {
    const searches = freePlanCapacity(planUnits(search10k.units, search10k.requests));
    lines.push(
      `    searches a Free plan day at 10k items: ${Math.floor(searches.perDay).toLocaleString("en")} (${limitName(searches.binding)} binds; target ≥ 5,000); ` +
        `rows read per search ${fmt(search10k.units.d1_rows_read, 1)} (target ≤ 1,000)`,
    );
  }
  if (search10k && search100k)
    lines.push(
      `    rows read per search at 100k / at 10k: ${fmt(search100k.units.d1_rows_read / search10k.units.d1_rows_read, 2)}x (target ≤ 3x)`,
    );
  const context = op(measured.at(-1).size, "memory_context_build");
  if (context) {
    const kvWrites = context.units.kv_writes;
    const d1Binds = Math.min(
      100_000 / Math.max(context.units.d1_rows_written, 1e-9),
      5_000_000 / Math.max(context.units.d1_rows_read, 1e-9),
    );
    lines.push(
      `    memory_context_build: ${fmt(kvWrites, 2)} KV writes a call, so the Free plan's 1,000 KV writes last ${kvWrites > 0 ? Math.floor(1000 / kvWrites).toLocaleString("en") : "unbounded"} calls; D1 alone would allow ${Math.floor(d1Binds).toLocaleString("en")}`,
    );
  }
  return lines;
}
