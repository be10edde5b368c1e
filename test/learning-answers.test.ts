import { env } from "cloudflare:workers";
import { describe, expect, it, vi } from "vitest";
import { RETRY_DELAYS_MS } from "../src/core/extraction/retry-schedule";
import { recoverRecentJobs } from "../src/jobs/recent-jobs";
import type { JobMessage } from "../src/messages";
import { SYNTAX_SLIPS } from "./bench/answer-syntax.mjs";
import { FIELD_SLIPS, SLIPS } from "./fakes/noisy-model";
import { call, newKey } from "./helpers";
import {
  conversation,
  deliverOnce,
  derivedRows,
  extract,
  fact,
  history,
  modelEnv,
  NoisyModel,
  type Said,
  truthFrom,
} from "./learning-fixtures";
import { deliverJobs, lostQueue } from "./ownership-fixtures";

// Items 1-3 of learning you can trust: answers read memory by memory, windows never lost to the model's limits, and
// failed windows tried again, against a model that slips as real ones do (fakes/noisy-model.ts).

const T0 = Date.parse("2023-05-08T13:56:00Z");
const at = (minutes: number) => new Date(T0 + minutes * 60_000).toISOString();
const turn = (i: number, content: string, speaker = "Caroline"): Said => ({ speaker, content, timestamp: at(i) });

/** Six turns, one fact each: "Caroline fact 1." ... */
const SIX = Array.from({ length: 6 }, (_, i) => turn(i, `Fact number ${i + 1} about me.`));
const sixTruth = truthFrom(
  Object.fromEntries(
    SIX.map((s, i) => [
      s.content,
      () => [fact("Caroline", `Caroline fact ${i + 1}.`, i === 2 ? { type: "event", when: "2023-05" } : {})],
    ]),
  ),
);

describe("answers read memory by memory", () => {
  it("mends every plain slip, alone and mixed, and drops only the memory that still breaks the contract", async () => {
    const { t, ids } = await conversation(SIX);
    const model = new NoisyModel({
      truth: sixTruth,
      slip: (m, i) => SLIPS[i % SLIPS.length]!(m),
      invalid: () => ({
        type: "opinion",
        subject: "Caroline",
        key: null,
        text: "Caroline is nice.",
        when: null,
        sources: ["T1"],
      }),
    });
    await extract(t, model);
    expect(model.requests).toHaveLength(1);
    const rows = await derivedRows(t);
    expect(rows.map((r) => r.content).sort()).toEqual(SIX.map((_, i) => `Caroline fact ${i + 1}.`).sort());
    expect(rows.every((r) => r.key === null)).toBe(true);
    expect(rows.find((r) => r.content === "Caroline fact 1.")).toMatchObject({
      memory_kind: "fact",
      sources: [ids[0]],
    });
    // A partial date is the start of its month, and says so.
    const dated = rows.find((r) => r.content === "Caroline fact 3.")!;
    expect(dated).toMatchObject({ memory_kind: "event", valid_from: Date.UTC(2023, 4, 1), when_precision: "month" });
    const events = await history(t);
    const dropped = events.filter((e) => e.event === "dropped");
    expect(dropped).toHaveLength(1);
    expect(dropped[0]!.error).toMatch(
      /type 'opinion' is not one of fact, preference, event, instruction, task: memory dropped/,
    );
    const added = events.filter((e) => e.event === "added");
    expect(added).toHaveLength(6);
    expect(added.map((e) => e.reason ?? "").join(" ")).toMatch(/type 'Fact' read as fact/);
    expect(added.map((e) => e.reason ?? "").join(" ")).toMatch(/ref '\[T\d\]' read as T\d/);
    // What the precision is, every read shows.
    const got = await call(t.apiKey, "memory_get", { id: dated.id });
    expect(got).toMatchObject({ when_precision: "month", valid_from: "2023-05-01T00:00:00.000Z" });
  });

  it("reads JSON wrapped in prose and a fence, and fields slipped beyond the contract's words, in one call", async () => {
    const dated = truthFrom(
      Object.fromEntries(
        SIX.map((s, i) => [
          s.content,
          () => [fact("Caroline", `Caroline fact ${i + 1}.`, i === 3 ? { type: "event", when: "2023-05-07" } : {})],
        ]),
      ),
    );
    const { t, ids } = await conversation(SIX);
    const model = new NoisyModel({ truth: dated, wrap: true, slip: (m, i) => FIELD_SLIPS[i % FIELD_SLIPS.length]!(m) });
    await extract(t, model);
    expect(model.requests).toHaveLength(1);
    const rows = await derivedRows(t);
    expect(rows.map((r) => [r.content, r.sources]).sort()).toEqual(
      SIX.map((_, i) => [`Caroline fact ${i + 1}.`, [ids[i]]]).sort(),
    );
    expect(rows.find((r) => r.content === "Caroline fact 4.")).toMatchObject({
      memory_kind: "event",
      valid_from: Date.UTC(2023, 4, 7),
      when_precision: "day",
    });
    const events = await history(t);
    expect(events.filter((e) => e.event !== "added")).toEqual([]);
    const reasons = events.map((e) => e.reason ?? "").join(" ");
    for (const said of [
      "the JSON read from inside the answer's other text",
      "type 'facts' read as fact",
      "read as T2",
      "when 'May 7, 2023' read as the day 2023-05-07",
      "field 'content' read as text",
      "field 'kind' read as type",
    ])
      expect(reasons).toContain(said);
  });

  it.each(Object.keys(SYNTAX_SLIPS))("reads an answer written as %s without asking again", async (syntax) => {
    const { t, ids } = await conversation(SIX);
    const model = new NoisyModel({ truth: sixTruth, syntax: SYNTAX_SLIPS[syntax] });
    await extract(t, model);
    expect(model.requests).toHaveLength(1);
    const rows = await derivedRows(t);
    expect(rows.map((r) => [r.content, r.sources]).sort()).toEqual(
      SIX.map((_, i) => [`Caroline fact ${i + 1}.`, [ids[i]]]).sort(),
    );
    const events = await history(t);
    expect(events.filter((e) => e.event !== "added")).toEqual([]);
    expect(events.map((e) => e.reason ?? "").join(" ")).toMatch(
      /the answer's JSON syntax repaired|memories given without a list|field 'Memories' read as memories/,
    );
  });

  it("asks again only an answer that is not JSON or has no memories", async () => {
    const { t } = await conversation(SIX.slice(0, 2));
    const model = new NoisyModel({ truth: sixTruth, broken: 1 });
    await extract(t, model);
    expect(model.requests).toHaveLength(2);
    expect(model.requests[1]!.window.prompt).toMatch(/Your previous answer was refused: The answer is not valid JSON/);
    expect((await derivedRows(t)).map((r) => r.content)).toEqual(["Caroline fact 1.", "Caroline fact 2."]);
  });
});

describe("a window is never lost to the model's limits", () => {
  it("splits a window whose answer was cut, down to single turns, and keeps what came whole", async () => {
    const said = [...SIX, turn(6, "Three things: I swim, I paint and I bake.")];
    const { t, ids } = await conversation(said);
    const truth = truthFrom({
      ...Object.fromEntries(SIX.map((s, i) => [s.content, () => [fact("Caroline", `Caroline fact ${i + 1}.`)]])),
      "Three things": () => [
        fact("Caroline", "Caroline swims."),
        fact("Caroline", "Caroline paints."),
        fact("Caroline", "Caroline bakes."),
      ],
    });
    // Any answer of more than two memories is cut mid-memory, as a model out of output tokens stops.
    const model = new NoisyModel({ truth, cutAfter: 2 });
    await extract(t, model);
    const contents = (await derivedRows(t)).map((r) => r.content).sort();
    // The six single facts all come through; the last turn alone still gives three, so its third is lost, and said.
    expect(contents).toEqual(
      [...SIX.map((_, i) => `Caroline fact ${i + 1}.`), "Caroline swims.", "Caroline paints."].sort(),
    );
    const turnsAsked = model.requests.map((r) => r.window.turns.length);
    expect(turnsAsked[0]).toBe(7);
    expect(Math.min(...turnsAsked)).toBe(1);
    const events = await history(t);
    expect(events.filter((e) => e.event === "dropped").map((e) => e.error)).toEqual([
      "the answer was cut after 2 whole memories: the rest dropped",
    ]);
    expect(events.filter((e) => e.event === "failed")).toEqual([]);
    const window = await t.db
      .prepare("SELECT status, calls, turns FROM extraction_windows WHERE tenant_id = ?")
      .bind(t.tenantId)
      .first<{ status: string; calls: number; turns: number }>();
    expect(window).toMatchObject({ status: "done", calls: model.requests.length, turns: 7 });
    expect(ids).toHaveLength(7);
  });

  it("asks for fewer turns when the prompt is longer than the model takes", async () => {
    const { t } = await conversation(SIX);
    const model = new NoisyModel({ truth: sixTruth, contextChars: 300 });
    await extract(t, model);
    expect(await derivedRows(t)).toHaveLength(6);
    expect(model.requests.some((r) => r.status === 400)).toBe(true);
  });

  it("sends max_completion_tokens and no temperature to an endpoint that refuses them, LLM_MAX_OUTPUT_TOKENS as the limit", async () => {
    const { t } = await conversation(SIX.slice(0, 1));
    const model = new NoisyModel({ truth: sixTruth, refuses: ["max_tokens", "temperature"] });
    await extract(t, model, { env: { LLM_MAX_OUTPUT_TOKENS: "3000" } });
    const last = model.requests[model.requests.length - 1]!;
    expect(last.status).toBe(200);
    expect(last.body).toMatchObject({ max_completion_tokens: 3000 });
    expect(last.body).not.toHaveProperty("temperature");
    expect(await derivedRows(t)).toHaveLength(1);
  });
});

describe("a failed window is tried again later", () => {
  it("records the endpoint's own message, goes on with later windows, and the minute pass tries it again", async () => {
    // About 100 tokens a turn: 200-token windows of two turns each.
    const padding = " We talked for a while about the weather, the garden, the neighbours and the week ahead.".repeat(
      4,
    );
    const { t } = await conversation(SIX.map((s) => ({ ...s, content: s.content + padding })));
    // The first window's call is refused (401); the two after it are read.
    const model = new NoisyModel({ truth: sixTruth, unauthorized: 1 });
    await extract(t, model, { env: { EXTRACTION_WINDOW_TOKENS: "200" } });
    let windows = await t.db
      .prepare(
        "SELECT id, status, attempts, retry_at, created_at, error FROM extraction_windows WHERE tenant_id = ? ORDER BY first_position",
      )
      .bind(t.tenantId)
      .all<{
        id: string;
        status: string;
        attempts: number;
        retry_at: number | null;
        created_at: number;
        error: string;
      }>();
    const [failed] = windows.results;
    expect(windows.results.map((w) => w.status)).toContain("done");
    expect(failed).toMatchObject({ status: "failed", attempts: 1 });
    expect(failed!.error).toMatch(/answered 401: .*Incorrect API key provided/);
    expect(failed!.retry_at! - failed!.created_at).toBeLessThanOrEqual(5 * 60_000);
    const before = await history(t);
    expect(before.find((e) => e.event === "failed")).toMatchObject({
      error: expect.stringMatching(/Incorrect API key provided/),
      reason: expect.stringMatching(/^try 1 of 7 failed; tried again at /),
    });

    // The minute pass, once the retry is due, sends the window's job; the job reads it and it is done.
    const queue = lostQueue();
    await recoverRecentJobs({ ...env, JOBS: queue.binding } as typeof env, failed!.retry_at! + 1);
    const retry = queue.sent.find((m: JobMessage) => m.type === "extract" && m.retryWindow === failed!.id);
    expect(retry).toBeDefined();
    const fetch = vi.spyOn(globalThis, "fetch").mockImplementation(model.fetch);
    await deliverJobs([retry!], modelEnv({ EXTRACTION_WINDOW_TOKENS: "200" }));
    fetch.mockRestore();
    windows = await t.db
      .prepare(
        "SELECT id, status, attempts, retry_at, created_at, error FROM extraction_windows WHERE tenant_id = ? ORDER BY first_position",
      )
      .bind(t.tenantId)
      .all();
    expect(windows.results[0]).toMatchObject({ status: "done", attempts: 2, retry_at: null });
    expect(await derivedRows(t)).toHaveLength(6);
    const after = await history(t);
    expect(after.find((e) => e.event === "retried")).toMatchObject({ reason: "try 2 read the window" });
  });

  it("stops trying a project's failed windows once extraction is turned off; one failed after, forced, is tried", async () => {
    const { t } = await conversation(SIX.slice(0, 2));
    await extract(t, new NoisyModel({ truth: sixTruth, unauthorized: 1 }));
    const windows = () =>
      t.db
        .prepare("SELECT conversation_id, status, retry_at FROM extraction_windows WHERE tenant_id = ? ORDER BY 1")
        .bind(t.tenantId)
        .all<{ conversation_id: string; status: string; retry_at: number | null }>()
        .then((r) => r.results);
    expect((await windows())[0]).toMatchObject({ status: "failed", retry_at: expect.any(Number) });
    await call(t.apiKey, "memory_settings", { project_id: "p", extract: false });
    expect(await windows()).toEqual([{ conversation_id: "c", status: "failed", retry_at: null }]);
    expect((await history(t)).filter((e) => e.event === "failed").map((e) => e.reason)).toContain(
      "extraction was turned off for the project: not tried again",
    );
    const queue = lostQueue();
    await recoverRecentJobs({ ...env, JOBS: queue.binding } as typeof env, Date.now() + 25 * 3_600_000);
    expect(queue.sent.filter((m: JobMessage) => m.type === "extract" && m.tenantId === t.tenantId)).toEqual([]);

    // A conversation the client asks to extract anyway (extract: true) fails after the change: it is tried again.
    await call(t.apiKey, "memory_ingest", {
      conversation_id: "d",
      project_id: "p",
      messages: [{ role: "user", ...SIX[2]! }],
      extract: true,
    });
    const fetch = vi
      .spyOn(globalThis, "fetch")
      .mockImplementation(new NoisyModel({ truth: sixTruth, unauthorized: 1 }).fetch);
    await deliverJobs(
      [{ type: "extract", tenantId: t.tenantId, conversationId: "d", flush: true, force: true }],
      modelEnv(),
    );
    fetch.mockRestore();
    expect((await windows())[1]).toMatchObject({
      conversation_id: "d",
      status: "failed",
      retry_at: expect.any(Number),
    });
  });

  it("gives a window at least 6 tries over 24 hours, the first within 5 minutes", () => {
    let at = 0;
    const tries = [at];
    for (const delay of RETRY_DELAYS_MS) tries.push((at += delay));
    expect(tries[1]).toBeLessThanOrEqual(5 * 60_000);
    expect(tries.filter((time) => time <= 24 * 3_600_000).length).toBeGreaterThanOrEqual(6);
  });

  it("memory_reextract forces a try of a window out of tries", async () => {
    const { t } = await conversation(SIX.slice(0, 2));
    const model = new NoisyModel({ truth: sixTruth, broken: 2 });
    await extract(t, model);
    await t.db.prepare("UPDATE extraction_windows SET retry_at = NULL WHERE tenant_id = ?").bind(t.tenantId).run();
    const operator = await newKey(t.tenantId, { scopes: ["read", "write", "admin"] });
    await expect(call(t.apiKey, "memory_reextract", { project_id: "p" })).rejects.toThrow(
      /needs a key with the 'admin' scope/,
    );
    const answer = await call(operator.apiKey, "memory_reextract", { project_id: "p" });
    expect(answer).toMatchObject({ conversations: ["c"], turns: 2 });
    await extract(t, model);
    expect((await derivedRows(t)).map((r) => r.content)).toEqual(["Caroline fact 1.", "Caroline fact 2."]);
    expect((await history(t)).map((e) => e.event)).toContain("reextract");
  });
});

describe("a window fits the Free plan's 50 queries an invocation", () => {
  it("a job starts a window only while the invocation has the queries for it; the rest wait for the next", async () => {
    const padding = " We talked for a while about the weather, the garden, the neighbours and the week ahead.".repeat(
      4,
    );
    // Twelve turns of ~100 tokens, each with three memories (one keyed): six windows of 200 tokens.
    const said = Array.from({ length: 12 }, (_, i) => turn(i, `Entry ${i + 1}: things about me.${padding}`));
    const { t } = await conversation(said);
    const truth = truthFrom(
      Object.fromEntries(
        said.map((_, i) => [
          `Entry ${i + 1}:`,
          () => [
            fact("Caroline", `Caroline keeps journal entry ${i + 1}.`),
            fact("Caroline", `Caroline's mood on day ${i + 1} was calm.`, { key: `mood_day_${i + 1}` }),
            fact("Caroline", `Caroline walked ${i + 1} km.`, { type: "event", when: "2023-05-08" }),
          ],
        ]),
      ),
    );
    const model = new NoisyModel({ truth });
    const windows = async () =>
      (await t.db
        .prepare("SELECT COUNT(*) AS n FROM extraction_windows WHERE tenant_id = ? AND status = 'done'")
        .bind(t.tenantId)
        .first<{ n: number }>())!.n;
    const done: number[] = [];
    for (let delivery = 0; delivery < 6 && (done.at(-1) ?? 0) < 6; delivery++) {
      const { retried } = await deliverOnce(t, model, {
        EXTRACTION_WINDOW_TOKENS: "200",
        D1_QUERIES_PER_INVOCATION: "50",
      });
      expect(retried).toBe(false);
      done.push(await windows());
    }
    expect(done.at(-1)).toBe(6);
    // Each delivery read at least one window, and none ran out of queries mid-window.
    expect(done.every((n, i) => n > (done[i - 1] ?? 0))).toBe(true);
    expect(await derivedRows(t)).toHaveLength(36);
  });
});
