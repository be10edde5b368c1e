// LoCoMo conversations as a client stores them for extraction: one memory_ingest call per session (≤ 500 turns),
// each turn with its speaker and its session's date, then the wait until extraction has read every turn. Shared by
// the extraction and qa suites; everything it needs comes as arguments, so test/node/bench-extraction.test.ts runs
// it against a fake tool caller.
import { setTimeout as sleep } from "node:timers/promises";
import { parseLocomoDate } from "./data.mjs";

/** memory_ingest's limit of messages a call. */
const MAX_MESSAGES = 500;

/** A sample's sessions in order: the conversation id each is stored under, its start (epoch ms), its turns. */
export function sessionsOf(sample) {
  const c = sample.conversation;
  const sessions = [];
  for (let n = 1; c[`session_${n}`]; n++)
    sessions.push({
      conversationId: `${sample.sample_id}:session_${n}`,
      at: parseLocomoDate(c[`session_${n}_date_time`]),
      turns: c[`session_${n}`],
    });
  return sessions;
}

/** A turn's text as stored: a shared photo's caption goes with it, as in the locomo suite. */
export const contentOf = (turn) =>
  turn.blip_caption ? `${turn.text} [shares a photo: ${turn.blip_caption}]` : turn.text;

/**
 * Every sample's sessions through memory_ingest with extraction on, in order; turn i of a session is said i seconds
 * after the session's date. Returns the stored turns by item id ({dia, speaker, at, project}), the conversation ids,
 * the number of calls and the seconds they took.
 */
export async function ingestConversations(call, samples) {
  const turns = new Map();
  const conversationIds = [];
  let calls = 0;
  const started = performance.now();
  for (const sample of samples) {
    for (const session of sessionsOf(sample)) {
      for (let from = 0; from < session.turns.length; from += MAX_MESSAGES) {
        const part = session.turns.slice(from, from + MAX_MESSAGES);
        const at = (i) => session.at + (from + i) * 1000;
        const { result } = await call("memory_ingest", {
          conversation_id: session.conversationId,
          project_id: sample.sample_id,
          extract: true,
          messages: part.map((turn, i) => ({
            role: turn.speaker === sample.conversation.speaker_a ? "user" : "assistant",
            speaker: turn.speaker,
            content: contentOf(turn),
            timestamp: at(i),
          })),
        });
        if (result.extraction !== "queued")
          throw new Error(`memory_ingest: extraction ${result.extraction}, not queued`);
        result.ids.forEach((id, i) => {
          turns.set(id, { dia: part[i].dia_id, speaker: part[i].speaker, at: at(i), project: sample.sample_id });
        });
        calls++;
      }
      conversationIds.push(session.conversationId);
    }
  }
  return { turns, conversationIds, calls, seconds: (performance.now() - started) / 1000 };
}

/** Each conversation's memory_history events (the newest 200 of each: a session's decisions fit). */
export async function readHistories(call, conversationIds) {
  const histories = new Map();
  for (const id of conversationIds)
    histories.set(id, (await call("memory_history", { conversation_id: id })).result.events);
  return histories;
}

/**
 * Waits until extraction has read every turn. With `progress` (the bench reads the conversations' cursors from its
 * local D1), exactly: until no conversation has turns left unread. Without, from memory_history: until every
 * conversation has an event and no new event has come for `quietMs` (a window that adds nothing logs no event,
 * so the cursor is the sure sign). Returns the seconds waited and the conversations left unread at the end.
 */
export async function waitForExtraction(
  call,
  conversationIds,
  { progress, pollMs = 1000, quietMs = 15_000, timeoutMs = 30 * 60_000 } = {},
) {
  const started = performance.now();
  const elapsed = () => performance.now() - started;
  let events = -1;
  let changed = 0;
  for (;;) {
    let unread;
    let done;
    if (progress) {
      unread = (await progress()).unread;
      done = unread === 0;
    } else {
      const histories = [...(await readHistories(call, conversationIds)).values()];
      const count = histories.reduce((n, h) => n + h.length, 0);
      if (count !== events) [events, changed] = [count, elapsed()];
      unread = histories.filter((h) => h.length === 0).length;
      done = unread === 0 && elapsed() - changed >= quietMs;
    }
    if (done || elapsed() > timeoutMs)
      return { seconds: elapsed() / 1000, unread, exact: Boolean(progress), timedOut: !done };
    await sleep(pollMs);
  }
}

/** Ingests the samples, waits for extraction, then for the jobs that follow (embedding, links: `settle`). */
export async function ingestAndExtract({ call, samples, progress, settle, wait }) {
  const ingest = await ingestConversations(call, samples);
  const waited = await waitForExtraction(call, ingest.conversationIds, { progress, ...wait });
  const settleSeconds = settle ? await settle() : 0;
  return { ingest, waited, settleSeconds };
}

/** Every question of the samples, with its project and its evidence turns as a set of dia ids. */
export function locomoQuestions(samples) {
  return samples.flatMap((s) =>
    s.qa.map((qa) => ({
      ...qa,
      project: s.sample_id,
      evidence: new Set((qa.evidence ?? []).join(" ").match(/D\d+:\d+/g) ?? []),
    })),
  );
}

/** A derived hit is credited with at most this many of its sources, its earliest: see coveredTurns. */
export const DERIVED_SOURCES_CREDITED = 2;

/**
 * The evidence turns (dia ids) that results cover: a turn itself; a derived memory through its sources, at most its
 * DERIVED_SOURCES_CREDITED earliest (by the time they were said), so that a memory citing many turns does not cover
 * them all for one slot; and the source turns search folded into a memory's result (`folded_sources`), which ranked
 * on their own.
 */
export function coveredTurns(results, turns) {
  const covered = new Set();
  const cover = (id) => {
    if (turns.has(id)) covered.add(turns.get(id).dia);
  };
  for (const r of results) {
    cover(r.item_id ?? r.id);
    if (!r.derived) continue;
    const sources = (r.sources ?? []).filter((id) => turns.has(id));
    sources.sort((a, b) => turns.get(a).at - turns.get(b).at);
    sources.slice(0, DERIVED_SOURCES_CREDITED).forEach(cover);
    for (const folded of r.folded_sources ?? []) cover(folded.item_id);
  }
  return covered;
}

/** Share of the evidence covered. */
export function evidenceRecall(evidence, covered) {
  let hit = 0;
  for (const dia of evidence) if (covered.has(dia)) hit++;
  return evidence.size === 0 ? Number.NaN : hit / evidence.size;
}
