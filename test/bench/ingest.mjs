// Ingest throughput as a client sees it, background jobs (embed, auto-link) included:
// LoCoMo turns through log_chat in JSON-RPC batches of 50, and MS MARCO passages through
// memory_batch_store (100 per call) to 10,000 items in one project; then how long the jobs take to settle.
import { loadLocomo, loadMsmarco } from "./data.mjs";
import { fmt } from "./metrics.mjs";

const DOCS = Number(process.env.INGEST_DOCS ?? 10_000);

export async function runIngest(newTenant) {
  const lines = [];
  lines.push(...(await logChat(newTenant)));
  lines.push(...(await batchStore(newTenant)));
  return lines;
}

async function logChat(newTenant) {
  const tenant = await newTenant("ingest-chat");
  const calls = [];
  for (const sample of loadLocomo()) {
    const conversation = sample.conversation;
    for (let n = 1; conversation[`session_${n}`]; n++) {
      for (const turn of conversation[`session_${n}`]) {
        calls.push([
          "log_chat",
          {
            conversation_id: `${sample.sample_id}:session_${n}`,
            role: turn.speaker === conversation.speaker_a ? "user" : "assistant",
            agent_name: turn.speaker,
            content: turn.text,
            project_id: sample.sample_id,
          },
        ]);
      }
    }
  }
  const started = performance.now();
  await tenant.callMany(calls);
  const writeSeconds = (performance.now() - started) / 1000;
  const settle = await tenant.settle();
  return [
    `Ingest: log_chat, ${calls.length} LoCoMo turns in JSON-RPC batches of 50`,
    `  ${fmt(calls.length / writeSeconds, 0)} turns/s (${fmt(writeSeconds, 1)} s); jobs (embed, link) settled ${fmt(settle, 1)} s after the last write (${fmt(settle / writeSeconds, 2)}x the write time)`,
    await serverSide(tenant, "log_chat", 50),
  ];
}

async function batchStore(newTenant) {
  const { corpus } = loadMsmarco();
  const tenant = await newTenant("ingest-docs");
  const texts = Array.from(
    { length: DOCS },
    (_, i) =>
      `${corpus[i % corpus.length].text}${i >= corpus.length ? ` (copy ${Math.floor(i / corpus.length)})` : ""}`,
  );
  const windows = [];
  const started = performance.now();
  let windowStart = started;
  for (let i = 0; i < texts.length; i += 100) {
    await tenant.call("memory_batch_store", {
      namespace: "docs",
      memories: texts.slice(i, i + 100).map((content) => ({ content })),
    });
    if ((i + 100) % 5000 === 0) {
      windows.push({ upTo: i + 100, rate: 5000 / ((performance.now() - windowStart) / 1000) });
      windowStart = performance.now();
    }
  }
  const writeSeconds = (performance.now() - started) / 1000;
  const settle = await tenant.settle();
  return [
    `Ingest: memory_batch_store, ${DOCS} MS MARCO passages in one project (100 per call, auto-link on)`,
    `  ${windows.map((w) => `${fmt(w.rate, 0)} docs/s up to ${w.upTo}`).join(", ")} (${fmt(DOCS / writeSeconds, 0)} docs/s overall, ${fmt(writeSeconds, 1)} s)`,
    `  jobs (embed, link) settled ${fmt(settle, 1)} s after the last write (${fmt(settle / writeSeconds, 2)}x the write time)`,
    await serverSide(tenant, "memory_batch_store", 1),
  ];
}

/** Where a request's time went, inside the worker (the usage log): D1 wait and the worker's own time. */
async function serverSide(tenant, tool, callsPerRequest) {
  const row = (await tenant.call("get_usage_report", { period: "day" })).result.tools.find((t) => t.tool === tool);
  const per = (x) => fmt(x * callsPerRequest, 1);
  return (
    `  inside the worker, per request of ${callsPerRequest}: p50 ${per(row.p50_ms)} ms, of which D1 ${per(row.d1_ms)} ms (mean, ${per(row.d1_round_trips)} round trips) ` +
    `and the worker's own time p50 ${per(row.worker_p50_ms)} ms`
  );
}
