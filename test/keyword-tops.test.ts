import { createExecutionContext, createScheduledController, waitOnExecutionContext } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { beforeAll, describe, expect, it } from "vitest";
import { UnitMeter } from "../src/billable-units";
import { type KeywordRow, keywordStatement } from "../src/core/keyword-index/lists";
import { keywordQueryTerms } from "../src/core/keyword-index/scores";
import { DF_KEPT, refreshTopPostings, TOP_COVERED, TOP_POSTINGS, TOP_TERM_DF } from "../src/core/keyword-index/tops";
import { expansionRead } from "../src/core/search/expansion";
import { meteredD1 } from "../src/db/metered-d1";
import { readKeywordMarks } from "../src/db/pass-marks";
import { tenantScope } from "../src/db/scope";
import worker from "../src/index";
import { PASSES_JOB } from "../src/jobs/pass-usage";
import { keywordCode } from "../src/shared/fts-text";
import { admin, call, newTenant, type TestTenant } from "./helpers";

/**
 * Top postings (src/core/keyword-index/tops.ts): a common word is read by its list of top chunks, the rarer words
 * in full, and every chunk found is scored exactly from its forward index.
 */

/** A harbour log of more chunks than TOP_TERM_DF ("harbour" in every one, twice in every seventh), and 30 rare ones. */
const COMMON = TOP_TERM_DF + 200;
const RARE = Array.from(
  { length: 30 },
  (_, k) => `A quillwort grows by the ${k % 3 === 0 ? "harbour " : ""}wall, plot ${k}.`,
);

/**
 * Makes the next pass look at the tenant again although its statistics did not move: forgets its last look and the
 * pass's mark of the shard's keyword write counter (which only a write moves).
 */
async function forceLook(db: D1Database, tenantId: string) {
  await db.batch([
    db.prepare("DELETE FROM keyword_top_scans WHERE tenant_id = ?").bind(tenantId),
    db.prepare("UPDATE shard_identity SET tops_written = NULL WHERE id = 1"),
  ]);
}

let t: TestTenant;
beforeAll(async () => {
  t = await newTenant();
  for (let i = 0; i < COMMON; i += 100) {
    const memories = Array.from({ length: Math.min(100, COMMON - i) }, (_, k) => ({
      content: `The harbour ${(i + k) % 7 === 0 ? "harbour " : ""}log, entry ${i + k}.`,
    }));
    await call(t.apiKey, "memory_batch_store", { memories });
  }
  await call(t.apiKey, "memory_batch_store", { memories: RARE.map((content) => ({ content })) });
}, 120_000);

/**
 * The keyword list (100 chunks) as search reads it, exact (`tops` false) or by top postings, with the rows D1 read;
 * limited to `projects` where given.
 */
async function list(query: string, tops: boolean, projects?: string[]) {
  const scope = tenantScope(t.db, t.tenantId);
  const filters = { tiers: ["active" as const], ...(projects ? { projects } : {}) };
  const result = await keywordStatement(scope, keywordQueryTerms(t.tenantId, query, tops)!, filters, 100).all<
    KeywordRow & { chunk_content: string }
  >();
  return {
    rows: result.results.map((r) => ({
      id: r.chunk_id,
      content: r.chunk_content,
      bm25: r.bm25,
      known: r.known,
      tops: r.tops,
    })),
    read: result.meta.rows_read,
  };
}

/** The same chunks in the same order with the same scores (summed in another order, so to 12 digits). */
function expectSameList(rows: { id: number; bm25: number }[], expected: { id: number; bm25: number }[]) {
  expect(rows.map((r) => r.id)).toEqual(expected.map((r) => r.id));
  rows.forEach((r, i) => expect(r.bm25).toBeCloseTo(expected[i]!.bm25, 12));
}

describe("top postings", () => {
  it("are built by the minute pass for the words past the threshold, and only for those", async () => {
    expect((await list("harbour", false)).rows[0]!.tops).toBe(0);
    const stats = async () =>
      (await (await admin("GET", `/tenants/${t.tenantId}/stats`)).json()) as {
        keyword_top_words: number;
        keyword_top_words_due: number;
      };
    // Not looked at yet: unknown.
    expect(await stats()).toMatchObject({ keyword_top_words: 0, keyword_top_words_due: null });
    const passWrites = async () =>
      (
        await t.db
          .prepare("SELECT SUM(d1_rows_written) AS n FROM usage_hours WHERE tenant_id = '' AND name = ?")
          .bind(PASSES_JOB)
          .first<{ n: number | null }>()
      )?.n ?? 0;
    const writtenBefore = await passWrites();
    const ctx = createExecutionContext();
    const passAt = Date.now();
    await worker.scheduled(createScheduledController({ cron: "* * * * *", scheduledTime: passAt }), env, ctx);
    await waitOnExecutionContext(ctx);
    // What the passes wrote is recorded on the shard as its own work at once, since they wrote (pass-usage.ts): at
    // least the lists' rows.
    expect((await passWrites()) - writtenBefore).toBeGreaterThanOrEqual(3 * TOP_POSTINGS);
    const { results } = await t.db
      .prepare("SELECT term, df FROM keyword_top_terms WHERE tenant_id = ? ORDER BY term")
      .bind(t.tenantId)
      .all<{ term: string; df: number }>();
    // harbour, log, entry (the stopword "the" gets none: search never reads it by a list), each with its top chunks.
    expect(results.map((r) => [r.term.slice(6), r.df])).toEqual([
      ["entri", COMMON],
      ["harbour", COMMON + 10],
      ["log", COMMON],
    ]);
    const sizes = await t.db
      .prepare("SELECT COUNT(*) AS n FROM keyword_tops WHERE tenant_id = ? GROUP BY term")
      .bind(t.tenantId)
      .all<{ n: number }>();
    expect(sizes.results.map((r) => r.n)).toEqual([TOP_POSTINGS, TOP_POSTINGS, TOP_POSTINGS]);
    // Each list says whose its chunks are (all in the default project here).
    const projects = await t.db
      .prepare("SELECT DISTINCT projects FROM keyword_top_terms WHERE tenant_id = ?")
      .bind(t.tenantId)
      .all<{ projects: string }>();
    expect(projects.results.map((r) => JSON.parse(r.projects))).toEqual([{ default: TOP_POSTINGS }]);
    // The look kept the count of every word in more than DF_KEPT chunks, "the" among them, as the index counts it.
    const kept = await t.db
      .prepare("SELECT term, df FROM keyword_dfs WHERE tenant_id = ? ORDER BY term")
      .bind(t.tenantId)
      .all<{ term: string; df: number }>();
    expect(kept.results.map((r) => r.term.slice(6))).toEqual(["entri", "harbour", "log", "the"]);
    for (const { term, df } of kept.results)
      expect(
        (await t.db.prepare("SELECT doc FROM chunks_fts_row WHERE term = ?").bind(term).first<{ doc: number }>())!.doc,
      ).toBe(df);
    expect(DF_KEPT).toBeLessThan(TOP_TERM_DF);
    // Nothing is due again until a word's count moves.
    expect(await stats()).toMatchObject({ keyword_top_words: 3, keyword_top_words_due: 0 });
    // A tenant whose words did not change since the last look is not read again (the look scans its postings).
    expect(await refreshTopPostings(t.db, passAt + 60_000)).toBe(0);
    expect(
      await t.db.prepare("SELECT due, scanned_at FROM keyword_top_scans WHERE tenant_id = ?").bind(t.tenantId).first(),
    ).toEqual({ due: 0, scanned_at: passAt });
    expect((await list("harbour", false)).rows[0]!.tops).toBe(1);
  });

  it("a common word with a rare one: the rare word's chunks first, each with its exact BM25, reading a fraction of the rows", async () => {
    const exact = await list("quillwort harbour", false);
    const bounded = await list("quillwort harbour", true);
    expect(
      bounded.rows
        .slice(0, RARE.length)
        .map((r) => r.content)
        .sort(),
    ).toEqual([...RARE].sort());
    // Past them, chunks of the common word alone: its top chunks, which are the full list's best.
    expectSameList(bounded.rows, exact.rows);
    expect(bounded.read * 2).toBeLessThan(exact.read);
  });

  it("a common word alone: its best chunks, as the full list ranks them", async () => {
    const exact = await list("harbour", false);
    const bounded = await list("harbour", true);
    expectSameList(bounded.rows, exact.rows);
    expect(bounded.rows[0]!.known).toBe(exact.rows[0]!.known);
  });

  it("finds chunks written after a list was built, and not chunks deleted since", async () => {
    const stored = await call(t.apiKey, "memory_store", {
      content: "Harbour harbour harbour: the harbour master's harbour.",
    });
    const bounded = await list("harbour", true);
    expect(bounded.rows[0]!.content).toBe("Harbour harbour harbour: the harbour master's harbour.");
    expectSameList(bounded.rows, (await list("harbour", false)).rows);

    const top = bounded.rows[1]!;
    const { item_id: itemId } = (await t.db
      .prepare("SELECT item_id FROM chunks WHERE id = ?")
      .bind(top.id)
      .first<{ item_id: string }>())!;
    await call(t.apiKey, "context_gc_prune", {
      project_id: "default",
      segment_ids: [itemId, stored.id],
      action: "delete",
      confirm: true,
    });
    const after = await list("harbour", true);
    expect(after.rows.map((r) => r.id)).not.toContain(top.id);
    expectSameList(after.rows, (await list("harbour", false)).rows);
  });

  it("a search limited to projects reads a list only where most of its chunks are theirs", async () => {
    const exact = await list("quillwort harbour", false, ["default"]);
    const bounded = await list("quillwort harbour", true, ["default"]);
    expectSameList(bounded.rows, exact.rows);
    expect(bounded.read * 2).toBeLessThan(exact.read);
    // Another project holds none of the lists' chunks: every posting is read (and none of them is the project's).
    const elsewhere = await list("quillwort harbour", true, ["elsewhere"]);
    expect(elsewhere.rows).toEqual([]);
    expect(elsewhere.read).toBeGreaterThanOrEqual((await list("quillwort harbour", false, ["elsewhere"])).read);
    // A list with fewer than TOP_COVERED of its chunks in the project is not read for it.
    const harbour = (await t.db
      .prepare("SELECT term, projects FROM keyword_top_terms WHERE tenant_id = ? AND term LIKE '%harbour'")
      .bind(t.tenantId)
      .first<{ term: string; projects: string }>())!;
    const setProjects = (projects: string) =>
      t.db
        .prepare("UPDATE keyword_top_terms SET projects = ? WHERE tenant_id = ? AND term = ?")
        .bind(projects, t.tenantId, harbour.term)
        .run();
    await setProjects(JSON.stringify({ default: TOP_COVERED - 1, elsewhere: TOP_POSTINGS - TOP_COVERED + 1 }));
    const thin = await list("quillwort harbour", true, ["default"]);
    expectSameList(thin.rows, exact.rows);
    expect(thin.read).toBeGreaterThanOrEqual(exact.read);
    // With no word topped, no posting's chunk row is read again to score common words (it read 1.6x the plain rows).
    expect(thin.read).toBeLessThan(exact.read * 1.4);
    // Unlimited searches read it (the whole list is the tenant's), and so does a search of both projects.
    expect((await list("quillwort harbour", true)).read * 2).toBeLessThan(exact.read);
    expect((await list("quillwort harbour", true, ["default", "elsewhere"])).read * 2).toBeLessThan(exact.read);
    await setProjects(harbour.projects);

    // Every statement tells the isolate whether some list serves its projects (so a search no list serves gets the
    // plain statement: keyword-tops.ts).
    expect(exact.rows[0]).toMatchObject({ tops: 1 });
    const lists = (
      await t.db
        .prepare("SELECT term, projects FROM keyword_top_terms WHERE tenant_id = ?")
        .bind(t.tenantId)
        .all<{ term: string; projects: string }>()
    ).results;
    await t.db
      .prepare("UPDATE keyword_top_terms SET projects = ? WHERE tenant_id = ?")
      .bind(JSON.stringify({ elsewhere: TOP_POSTINGS }), t.tenantId)
      .run();
    expect((await list("quillwort harbour", false, ["default"])).rows[0]).toMatchObject({ tops: 0 });
    expect((await list("quillwort harbour", false)).rows[0]).toMatchObject({ tops: 1 });
    for (const { term, projects } of lists)
      await t.db
        .prepare("UPDATE keyword_top_terms SET projects = ? WHERE tenant_id = ? AND term = ?")
        .bind(projects, t.tenantId, term)
        .run();
  });

  it("a common word's count is read from the kept counts, which the next look renews; a list whose word went is dropped", async () => {
    const harbour = (await t.db
      .prepare("SELECT term, df FROM keyword_dfs WHERE tenant_id = ? AND term LIKE '%harbour'")
      .bind(t.tenantId)
      .first<{ term: string; df: number }>())!;
    const before = await list("quillwort harbour", false);
    // A kept count unlike the index's changes the common word's IDF, in both statements alike: it is what they read.
    await t.db
      .prepare("UPDATE keyword_dfs SET df = 50 WHERE tenant_id = ? AND term = ?")
      .bind(t.tenantId, harbour.term)
      .run();
    const skewed = await list("quillwort harbour", false);
    expect(skewed.rows.at(-1)!.bm25).toBeGreaterThan(before.rows.at(-1)!.bm25);
    expectSameList((await list("quillwort harbour", true)).rows, skewed.rows);
    // A list for a word no chunk holds any more (written here; a pass would have built it when it was common).
    const gone = `${harbour.term.slice(0, 6)}zzgone`;
    await t.db
      .prepare(
        "INSERT INTO keyword_top_terms (tenant_id, term, df, through, built_at, projects) VALUES (?, ?, 5000, 0, 0, '{}')",
      )
      .bind(t.tenantId, gone)
      .run();
    // The next look (forced: the tenant's statistics did not move) renews the counts and drops that list.
    await forceLook(t.db, t.tenantId);
    expect(await refreshTopPostings(t.db, Date.now())).toBe(1);
    const indexed = await t.db.prepare("SELECT doc FROM chunks_fts_row WHERE term = ?").bind(harbour.term).first("doc");
    expect(
      await t.db
        .prepare("SELECT df FROM keyword_dfs WHERE tenant_id = ? AND term = ?")
        .bind(t.tenantId, harbour.term)
        .first("df"),
    ).toBe(indexed);
    expect(
      await t.db
        .prepare("SELECT COUNT(*) AS n FROM keyword_top_terms WHERE tenant_id = ? AND term = ?")
        .bind(t.tenantId, gone)
        .first("n"),
    ).toBe(0);
    expectSameList((await list("quillwort harbour", false)).rows, before.rows);
  });

  it("a tenant back under the threshold loses its lists and counts at the next pass, and gets them again past it", async () => {
    const tables = ["keyword_tops", "keyword_top_terms", "keyword_dfs", "keyword_top_scans"];
    const counts = async () =>
      Promise.all(
        tables.map((table) =>
          t.db.prepare(`SELECT COUNT(*) AS n FROM ${table} WHERE tenant_id = ?`).bind(t.tenantId).first<number>("n"),
        ),
      );
    expect((await counts()).every((n) => n! > 0)).toBe(true);
    const chunks = (await t.db
      .prepare("SELECT chunks FROM keyword_stats WHERE tenant_id = ?")
      .bind(t.tenantId)
      .first<number>("chunks"))!;
    // Set by hand: no write moved the shard's counter, so the pass is forced to look.
    const setChunks = async (n: number) => {
      await t.db.prepare("UPDATE keyword_stats SET chunks = ? WHERE tenant_id = ?").bind(n, t.tenantId).run();
      await t.db.prepare("UPDATE shard_identity SET tops_written = NULL WHERE id = 1").run();
    };
    await setChunks(TOP_TERM_DF);
    await refreshTopPostings(t.db, Date.now());
    expect(await counts()).toEqual([0, 0, 0, 0]);
    await setChunks(chunks);
    expect(await refreshTopPostings(t.db, Date.now())).toBe(3);
    expect((await counts()).every((n) => n! > 0)).toBe(true);
  });

  it("are not read while a common word of the query has none, or a chunk has no forward index", async () => {
    const exact = await list("quillwort harbour log", false);
    const harbour = (await t.db
      .prepare("SELECT term FROM keyword_top_terms WHERE tenant_id = ? AND term LIKE '%harbour'")
      .bind(t.tenantId)
      .first<{ term: string }>())!.term;
    await t.db
      .prepare("DELETE FROM keyword_top_terms WHERE tenant_id = ? AND term = ?")
      .bind(t.tenantId, harbour)
      .run();
    const without = await list("quillwort harbour log", true);
    expect(without.rows).toEqual(exact.rows);
    expect(without.read).toBeGreaterThanOrEqual(exact.read);
    // The next look builds it again (forced: the tenant's statistics may not have moved since the last).
    await forceLook(t.db, t.tenantId);
    expect(await refreshTopPostings(t.db, Date.now())).toBe(1);

    const chunk = (await list("quillwort", false)).rows[0]!.id;
    await t.db.prepare("UPDATE chunks SET term_freqs = NULL WHERE id = ?").bind(chunk).run();
    expect((await list("quillwort harbour log", true)).rows).toEqual(exact.rows);
  });

  it("feedback words score in the worker as BM25 over their postings, a chunk without a forward index included", async () => {
    const scope = tenantScope(t.db, t.tenantId);
    const filters = { tiers: ["active" as const] };
    const hits = async () =>
      (
        await keywordStatement(
          scope,
          keywordQueryTerms(t.tenantId, "quillwort harbour")!,
          filters,
          100,
        ).all<KeywordRow>()
      ).results;
    const rows = await hits();
    const expansion = async (candidates: KeywordRow[]) => {
      const read = expansionRead(scope, {
        query: "quillwort harbour",
        filters,
        feedbackFrom: rows.slice(0, 3).map((r) => ({ content: r.chunk_content, score: 1 })),
        firstHits: candidates.map((c) => c.chunk_id),
        sources: [],
        neighbours: true,
        links: true,
        similarLinkWeight: 0,
      })!;
      return read.read(await read.statement.all(), candidates).feedback;
    };
    // The best hits ("A quillwort grows by the harbour wall, plot 0.") share three words beyond the query, all kept.
    const words = ["grow", "wall", "plot"].map((w) => keywordCode(t.tenantId) + w);
    const expected = await postingsBm25(
      words,
      rows.map((r) => r.chunk_id),
    );
    expect(expected.size).toBe(RARE.length);
    const same = (feedback: Map<number, { bm25: number }>) => {
      expect([...feedback.keys()].sort()).toEqual([...expected.keys()].sort());
      for (const [id, f] of feedback) expect(f.bm25).toBeCloseTo(expected.get(id)!, 12);
    };
    same(await expansion(rows));
    const quillwort = rows.find((r) => r.chunk_content.includes("quillwort"))!;
    await t.db.prepare("UPDATE chunks SET term_freqs = NULL WHERE id = ?").bind(quillwort.chunk_id).run();
    const unindexed = await hits();
    expect(unindexed.find((r) => r.chunk_id === quillwort.chunk_id)).toMatchObject({
      term_freqs: null,
      unindexed_context: "",
    });
    same(await expansion(unindexed));
  });

  it("search through the tool answers alike before and after its isolate knows of them", async () => {
    const found = await call(t.apiKey, "search", { query: "quillwort harbour", mode: "keyword", limit: 10 });
    const again = await call(t.apiKey, "search", { query: "quillwort harbour", mode: "keyword", limit: 10 });
    expect(again.results).toEqual(found.results);
    expect(found.results).toHaveLength(10);
    expect(found.results.every((r: any) => r.content.includes("quillwort"))).toBe(true);
  });
});

describe("the top postings pass at rest", () => {
  it("reads the write counter's row alone while nothing was written, and looks again after a write", async () => {
    const u = await newTenant();
    const store = (text: string) => call(u.apiKey, "memory_batch_store", { memories: [{ content: text }] });
    await store("The harbour log, entry one.");
    // Until a pass leaves nothing due: then the counter's mark is where the counter is.
    while ((await refreshTopPostings(u.db, Date.now())) > 0);
    const meter = new UnitMeter();
    const d1 = meteredD1(u.db, meter);
    expect(await refreshTopPostings(d1, Date.now())).toBe(0);
    // The tenants' statistics are left unread (a row a tenant and its last look): the counter's row is all.
    expect(meter.current).toMatchObject({ d1RowsRead: 1, d1RowsWritten: 0 });
    // A write moves the counter: the next pass reads the tenants again and marks the count it covered.
    await store("The harbour log, entry two.");
    const before = meter.current.d1RowsRead;
    await refreshTopPostings(d1, Date.now());
    expect(meter.current.d1RowsRead - before).toBeGreaterThan(1);
    const marks = (await readKeywordMarks(u.db))!;
    expect(marks.topsWritten).toBe(marks.written);
  });
});

describe("top postings renewed", () => {
  it("write only what changed: the chunks that entered or left a list and the counts that moved", async () => {
    const u = await newTenant();
    const store = async (n: number, text: (i: number) => string) => {
      for (let i = 0; i < n; i += 100)
        await call(u.apiKey, "memory_batch_store", {
          memories: Array.from({ length: Math.min(100, n - i) }, (_, k) => ({ content: text(i + k) })),
        });
    };
    await store(COMMON, (i) => `The harbour log, entry ${i}.`);
    const meter = new UnitMeter();
    const d1 = meteredD1(u.db, meter);
    const pass = async () => {
      // Forced: another tenant's writes on this shard may have taken the pass's last look already.
      await forceLook(u.db, u.tenantId);
      const before = meter.current.d1RowsWritten;
      await refreshTopPostings(d1, Date.now());
      return meter.current.d1RowsWritten - before;
    };
    await pass();
    const listed = async () =>
      (
        await u.db
          .prepare("SELECT chunk_id FROM keyword_tops WHERE tenant_id = ? AND term LIKE '%harbour' ORDER BY chunk_id")
          .bind(u.tenantId)
          .all<{ chunk_id: number }>()
      ).results.map((r) => r.chunk_id);
    expect(await listed()).toHaveLength(TOP_POSTINGS);
    // A look with nothing moved writes nothing but its own record (a row and its key) and the pass's mark.
    expect(await pass()).toBeLessThanOrEqual(3);
    // 160 chunks where "harbour" weighs more than anywhere: the list is due, and 160 of its chunks give way to them.
    await store(TOP_POSTINGS / 2 + 10, (i) => `Harbour harbour harbour, berth ${i}.`);
    const written = await pass();
    const renewed = await listed();
    // The same list a build from nothing gives.
    await u.db.prepare("DELETE FROM keyword_tops WHERE tenant_id = ?").bind(u.tenantId).run();
    await u.db.prepare("DELETE FROM keyword_top_terms WHERE tenant_id = ?").bind(u.tenantId).run();
    await pass();
    expect(renewed).toEqual(await listed());
    // 160 rows in (two writes each: the row and its key's index entry), 160 out (one each), the moved counts and the
    // list's and the look's records: about half the 900 a list written anew costs (300 out, 300 in).
    expect(written).toBeLessThan(3 * (TOP_POSTINGS / 2 + 10) + 20);
  });
});

/**
 * Relevance feedback's scores as RM3-like weights over BM25 (search-expansion.ts), computed here from the words'
 * postings: each word weighs its share of the best hits' text (here equal: the three hits have the same length and
 * score) times its IDF, scaled so the strongest weighs 1.
 */
async function postingsBm25(terms: string[], chunkIds: number[]): Promise<Map<number, number>> {
  const totals = (await t.db
    .prepare("SELECT chunks AS n, CAST(tokens AS REAL) / chunks AS avgdl FROM keyword_stats WHERE tenant_id = ?")
    .bind(t.tenantId)
    .first<{ n: number; avgdl: number }>())!;
  const scores = new Map<number, number>();
  const idfs = [];
  for (const term of terms) {
    const df = (await t.db
      .prepare("SELECT doc FROM chunks_fts_row WHERE term = ?")
      .bind(term)
      .first<{ doc: number }>())!.doc;
    idfs.push(Math.max(Math.log((totals.n - df + 0.5) / (df + 0.5)), 1e-6));
  }
  const strongest = Math.max(...idfs);
  for (const [i, term] of terms.entries()) {
    const { results } = await t.db
      .prepare(
        `SELECT v.doc, SUM(CASE v.col WHEN 'content' THEN 1.0 ELSE 0.5 END) AS f, c.fts_tokens AS len FROM chunks_fts_instance v JOIN chunks c ON c.id = v.doc
         WHERE v.term = ? AND v.doc IN (SELECT value FROM json_each(?)) GROUP BY v.doc`,
      )
      .bind(term, JSON.stringify(chunkIds))
      .all<{ doc: number; f: number; len: number }>();
    const idf = idfs[i]!;
    for (const { doc, f, len } of results) {
      const saturated = (f * 2.2) / (f + 1.2 * (0.25 + (0.75 * len) / totals.avgdl));
      scores.set(doc, (scores.get(doc) ?? 0) + (idf / strongest) * idf * saturated);
    }
  }
  return scores;
}
