// LoCoMo: each turn a message (log_chat), each session a conversation, session dates as timestamps;
// every question asked with `search`, evidence recall@k. The baseline is plain FTS5 BM25 over the
// same turn texts: a second tenant stores each turn as a standalone memory (no conversation, so no
// context column) and is searched with mode "keyword".
import { measureAbstention } from "./abstention.mjs";
import { loadLocomo, parseLocomoDate } from "./data.mjs";
import { fmt, mean, pct, percentile, recallAt, uniqueInOrder } from "./metrics.mjs";

const CATEGORIES = { 1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop", 5: "adversarial" };
const KS = [1, 5, 10, 20];

export async function runLocomo(newTenant) {
  const samples = loadLocomo();
  const tenant = await newTenant("locomo");
  const diaByItem = new Map();
  let turns = 0;
  const ingestStart = performance.now();
  for (const sample of samples) {
    const calls = [];
    const conversation = sample.conversation;
    for (let n = 1; conversation[`session_${n}`]; n++) {
      const timestamp = parseLocomoDate(conversation[`session_${n}_date_time`]);
      conversation[`session_${n}`].forEach((turn, i) => {
        const content = turn.blip_caption ? `${turn.text} [shares a photo: ${turn.blip_caption}]` : turn.text;
        calls.push({
          dia: turn.dia_id,
          args: {
            conversation_id: `${sample.sample_id}:session_${n}`,
            role: turn.speaker === conversation.speaker_a ? "user" : "assistant",
            agent_name: turn.speaker,
            content,
            project_id: sample.sample_id,
            timestamp: timestamp + i * 1000,
          },
        });
      });
    }
    const results = await tenant.callMany(calls.map((c) => ["log_chat", c.args]));
    results.forEach((r, i) => diaByItem.set(r.message_id, calls[i].dia));
    turns += calls.length;
  }
  const ingestSeconds = (performance.now() - ingestStart) / 1000;
  const embedSeconds = await tenant.drainEmbeddings();
  const plain = await plainTenant(newTenant, samples);

  const questions = samples.flatMap((s) =>
    s.qa
      .map((qa) => ({ ...qa, project: s.sample_id, evidence: new Set((qa.evidence ?? []).join(" ").match(/D\d+:\d+/g) ?? []) }))
      .filter((qa) => qa.evidence.size > 0),
  );
  const modes = { hybrid: [], bm25: [], keyword: [], vector: [] };
  const latency = [];
  for (const qa of questions) {
    const args = { query: qa.question, project: qa.project, limit: 20 };
    const { result, ms } = await tenant.call("search", args);
    latency.push(ms);
    modes.hybrid.push(rank(result));
  }
  for (const mode of ["keyword", "vector"]) {
    const results = await tenant.callMany(questions.map((qa) => ["search", { query: qa.question, project: qa.project, limit: 20, mode }]));
    modes[mode] = results.map(rank);
  }
  const baseline = await plain.tenant.callMany(questions.map((qa) => ["search", { query: qa.question, project: qa.project, limit: 20, mode: "keyword" }]));
  modes.bm25 = baseline.map((result) => uniqueInOrder(result.results.flatMap((r) => plain.diasByItem.get(r.item_id) ?? [])));
  function rank(result) {
    return uniqueInOrder(result.results.map((r) => diaByItem.get(r.item_id)).filter(Boolean));
  }

  const recall = (name, k, filter = () => true) => mean(questions.map((qa, i) => (filter(qa) ? recallAt(modes[name][i], qa.evidence, k) : NaN)).filter(Number.isFinite));
  const lines = [];
  lines.push(`LoCoMo: ${samples.length} conversations, ${turns} turns, ${questions.length} questions with evidence`);
  lines.push(`  ingest (log_chat, JSON-RPC batches of 50): ${fmt(turns / ingestSeconds, 0)} turns/s; embedding drained ${fmt(embedSeconds, 1)} s after the last write`);
  lines.push(`  evidence recall@k (%)      ${KS.map((k) => `R@${k}`.padStart(6)).join("")}`);
  for (const name of ["hybrid", "bm25", "keyword", "vector"]) {
    const label = { hybrid: "hybrid search (default)", bm25: "plain FTS5 BM25 baseline", keyword: "keyword only (contextual)", vector: "vector only (local)" }[name];
    lines.push(`  ${label.padEnd(26)} ${KS.map((k) => pct(recall(name, k)).padStart(6)).join("")}`);
  }
  const gain = (recall("hybrid", 10) - recall("bm25", 10)) * 100;
  lines.push(`  hybrid - BM25 at R@10: ${gain >= 0 ? "+" : ""}${fmt(gain, 1)} points`);
  lines.push(`  per category, R@10 hybrid / BM25 (%):`);
  for (const [cat, label] of Object.entries(CATEGORIES)) {
    const only = (qa) => String(qa.category) === cat;
    const n = questions.filter(only).length;
    lines.push(`    ${cat} ${label.padEnd(12)} n=${String(n).padStart(4)}  ${pct(recall("hybrid", 10, only)).padStart(5)} / ${pct(recall("bm25", 10, only)).padStart(5)}`);
  }
  lines.push(`  search latency (hybrid, limit 20, ~${Math.round(turns / samples.length)} turns per project): p50 ${fmt(percentile(latency, 50))} ms, p95 ${fmt(percentile(latency, 95))} ms`);
  const texts = samples.flatMap((s) => Object.entries(s.conversation).flatMap(([k, v]) => (k.startsWith("session_") && Array.isArray(v) ? v.map((t) => `${t.text} ${t.blip_caption ?? ""}`) : [])));
  texts.push(...samples.flatMap((s) => [s.conversation.speaker_a, s.conversation.speaker_b]));
  lines.push(...(await measureAbstention(tenant, samples.map((s) => s.sample_id), texts, "message")));
  return lines;
}

/** The baseline's data: the same turn texts as standalone memories, one namespace per conversation. */
async function plainTenant(newTenant, samples) {
  const tenant = await newTenant("locomo-plain-bm25");
  const diasByItem = new Map();
  for (const sample of samples) {
    const turns = [];
    const conversation = sample.conversation;
    for (let n = 1; conversation[`session_${n}`]; n++) turns.push(...conversation[`session_${n}`]);
    for (let i = 0; i < turns.length; i += 100) {
      const slice = turns.slice(i, i + 100);
      const { result } = await tenant.call("memory_batch_store", {
        namespace: sample.sample_id,
        memories: slice.map((t) => ({ content: t.blip_caption ? `${t.text} [shares a photo: ${t.blip_caption}]` : t.text, type: "message" })),
      });
      result.ids.forEach((id, j) => diasByItem.set(id, [...(diasByItem.get(id) ?? []), slice[j].dia_id]));
    }
  }
  return { tenant, diasByItem };
}
