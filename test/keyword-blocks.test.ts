import { createExecutionContext, createScheduledController, waitOnExecutionContext } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { beforeAll, describe, expect, it } from "vitest";
import { UnitMeter } from "../src/billable-units";
import { refreshPostingBlocks } from "../src/core/keyword-index/block-pass";
import { blockTerms } from "../src/core/keyword-index/block-read";
import { blockList, blockTimedRows, planBlockList } from "../src/core/keyword-index/block-search";
import { BLOCK_SIZE, BLOCK_TERM_DF, type BlockEntry, decodeEntries, FLUSH_AT } from "../src/core/keyword-index/blocks";
import { saturated } from "../src/core/keyword-index/bm25";
import { rewriteChunkContexts } from "../src/core/keyword-index/indexing";
import {
  type KeywordRow,
  keywordStatement,
  type TimedRow,
  timedKeywordStatement,
  timedLists,
} from "../src/core/keyword-index/lists";
import { keywordQueryTerms } from "../src/core/keyword-index/scores";
import type { SearchFilters } from "../src/core/search/search-rows";
import { meteredD1 } from "../src/db/metered-d1";
import { readKeywordMarks } from "../src/db/pass-marks";
import { tenantScope } from "../src/db/scope";
import worker from "../src/index";
import { keywordCode } from "../src/shared/fts-text";
import { admin, call, newTenant, type TestTenant } from "./helpers";

/**
 * Posting blocks (src/core/keyword-index/blocks.ts): the minute pass keeps each word's postings as rows of entries
 * ordered by impact, and a search reads a few of them instead of every posting, with the same hits and scores as the
 * statement that reads every posting (lists.ts, keywordStatement).
 */

/** A harbour log: "harbour" in every chunk (twice in every seventh), more chunks than a block holds; 30 rare ones. */
const COMMON = BLOCK_SIZE + 200;
const RARE = Array.from(
  { length: 30 },
  (_, k) => `A quillwort grows by the ${k % 3 === 0 ? "harbour " : ""}wall, plot ${k}.`,
);

let t: TestTenant;
beforeAll(async () => {
  t = await newTenant();
  for (let i = 0; i < COMMON; i += 100) {
    const memories = Array.from({ length: Math.min(100, COMMON - i) }, (_, k) => ({
      content: `The harbour ${(i + k) % 7 === 0 ? "harbour " : ""}log, entry ${i + k}.`,
    }));
    // Every fifth in a project of its own.
    for (const namespace of ["default", "berths"])
      await call(t.apiKey, "memory_batch_store", {
        namespace,
        memories: memories.filter((_, k) => (k % 5 === 0) === (namespace === "berths")),
      });
  }
  await call(t.apiKey, "memory_batch_store", { memories: RARE.map((content) => ({ content })) });
}, 120_000);

const ACTIVE: SearchFilters = { tiers: ["active"] };

/** The list as the statement that reads every posting gives it (the reference), with the rows D1 read. */
async function exact(query: string, filters = ACTIVE, pool = 100) {
  const result = await keywordStatement(
    tenantScope(t.db, t.tenantId),
    keywordQueryTerms(t.tenantId, query)!,
    filters,
    pool,
  ).all<KeywordRow>();
  return { rows: result.results, read: result.meta.rows_read };
}

/** The list from posting blocks, with the rows its trips read (null: the blocks could not serve it). */
async function blocked(query: string, filters = ACTIVE, pool = 100, blocksRead?: number) {
  const meter = new UnitMeter();
  const scope = tenantScope(meteredD1(t.db, meter), t.tenantId);
  const rows = await blockList(scope, blockTerms(t.tenantId, query)!, filters, pool, blocksRead);
  return { rows, read: meter.current.d1RowsRead, trips: meter.current.d1RoundTrips };
}

/** Deletes items as a tenant does (context_gc_prune), each in its project. */
async function forget(tenant: TestTenant, itemIds: string[]) {
  const { results } = await tenant.db
    .prepare("SELECT id, project FROM items WHERE tenant_id = ? AND id IN (SELECT value FROM json_each(?))")
    .bind(tenant.tenantId, JSON.stringify(itemIds))
    .all<{ id: string; project: string }>();
  for (const project of new Set(results.map((r) => r.project)))
    await call(tenant.apiKey, "context_gc_prune", {
      project_id: project,
      segment_ids: results.filter((r) => r.project === project).map((r) => r.id),
      action: "delete",
      confirm: true,
    });
}

/** The same chunks in the same order with the same scores (summed in another order, so to 12 digits). */
function expectSame(rows: KeywordRow[] | null, expected: KeywordRow[]) {
  expect(rows).not.toBeNull();
  expect(rows!.map((r) => r.chunk_id)).toEqual(expected.map((r) => r.chunk_id));
  rows!.forEach((r, i) => {
    expect(r.bm25).toBeCloseTo(expected[i]!.bm25, 12);
    expect(r.known).toBeCloseTo(expected[i]!.known, 12);
    expect(r.known_share).toBeCloseTo(expected[i]!.known_share, 12);
    expect(r.chunk_content).toBe(expected[i]!.chunk_content);
  });
}

/** Minute passes until the shard has nothing due (forced to look: another file's writes may have moved the mark). */
async function passes(db = t.db) {
  await db.prepare("UPDATE shard_identity SET tops_written = NULL WHERE id = 1").run();
  for (let i = 0; i < 200; i++) {
    await refreshPostingBlocks(db, Date.now());
    const marks = await readKeywordMarks(db);
    if (marks && marks.topsWritten === marks.written) return;
  }
  throw new Error("the posting blocks pass did not finish");
}

const QUERIES = ["harbour", "quillwort harbour", "harbour log entry", "harbour wall plot 7", "entry 42"];

describe("posting blocks", () => {
  it("serve the same list as every posting before any block is built (every posting is the tail)", async () => {
    for (const query of QUERIES) expectSame((await blocked(query)).rows, (await exact(query)).rows);
  });

  it("are built by the minute pass: a word's postings by impact, best first, each block bounding the next", async () => {
    const stats = async () =>
      (await (await admin("GET", `/tenants/${t.tenantId}/stats`)).json()) as {
        keyword_block_words: number;
        keyword_blocks_due: number | null;
      };
    const ctx = createExecutionContext();
    await t.db.prepare("UPDATE shard_identity SET tops_written = NULL WHERE id = 1").run();
    await worker.scheduled(createScheduledController({ cron: "* * * * *", scheduledTime: Date.now() }), env, ctx);
    await waitOnExecutionContext(ctx);
    await passes();
    expect(await stats()).toMatchObject({ keyword_blocks_due: 0 });
    const code = keywordCode(t.tenantId);
    const harbour = (
      await t.db
        .prepare(
          "SELECT block, max_impact, avgdl, through, entries FROM keyword_blocks WHERE tenant_id = ? AND term = ? ORDER BY block",
        )
        .bind(t.tenantId, `${code}harbour`)
        .all<{ block: number; max_impact: number; avgdl: number; through: number; entries: string }>()
    ).results;
    expect(harbour.map((b) => b.block)).toEqual([0, 1]);
    const entries = harbour.map((b) => decodeEntries(b.entries));
    expect(entries.map((e) => e.length)).toEqual([BLOCK_SIZE, COMMON + 10 - BLOCK_SIZE]);
    const impact = ([, f, len]: BlockEntry) => saturated(f, len!, harbour[0]!.avgdl);
    // Every entry of block 0 weighs at least as much as any of block 1, whose best is its bound (a hair above).
    expect(Math.min(...entries[0]!.map(impact))).toBeGreaterThanOrEqual(Math.max(...entries[1]!.map(impact)));
    expect(harbour[1]!.max_impact).toBeGreaterThanOrEqual(Math.max(...entries[1]!.map(impact)));
    expect(harbour[1]!.max_impact).toBeCloseTo(Math.max(...entries[1]!.map(impact)), 9);
    // Entries carry the chunk's project; every chunk holding the word is in one block.
    expect(new Set(entries.flat().map((e) => e[3]))).toEqual(new Set(["default", "berths"]));
    const df = await t.db
      .prepare("SELECT doc FROM chunks_fts_row WHERE term = ?")
      .bind(`${code}harbour`)
      .first<number>("doc");
    expect(new Set(entries.flat().map((e) => e[0])).size).toBe(df);
    // A word in fewer than BLOCK_TERM_DF chunks has none: a search reads its postings.
    expect(RARE.length).toBeGreaterThanOrEqual(BLOCK_TERM_DF);
    const words = (
      await t.db
        .prepare("SELECT term FROM keyword_blocks WHERE tenant_id = ? AND block = 0 ORDER BY term")
        .bind(t.tenantId)
        .all<{ term: string }>()
    ).results.map((r) => r.term.slice(code.length));
    expect(words).toEqual(expect.arrayContaining(["entri", "harbour", "log", "quillwort", "wall", "plot"]));
    expect(words).not.toContain("42");
    expect((await stats()).keyword_block_words).toBe(words.length);
  });

  it("serve the same list as every posting, reading a fraction of the rows, in two trips", async () => {
    for (const query of QUERIES) {
      const reference = await exact(query);
      const read = await blocked(query);
      expectSame(read.rows, reference.rows);
      expect(read.trips).toBe(2);
      if (query !== "entry 42") expect(read.read * 3).toBeLessThan(reference.read);
    }
  });

  it("through project filters, other projects' entries are left out before the walk", async () => {
    for (const projects of [["berths"], ["default"], ["berths", "default"], ["elsewhere"]]) {
      const filters = { ...ACTIVE, projects };
      for (const query of QUERIES) expectSame((await blocked(query, filters)).rows, (await exact(query, filters)).rows);
    }
  });

  it("give a query naming a time the same lists as the statement over every posting", async () => {
    const scope = tenantScope(t.db, t.tenantId);
    const times = (await t.db
      .prepare("SELECT MIN(created_at) AS first, MAX(created_at) AS last FROM items WHERE tenant_id = ?")
      .bind(t.tenantId)
      .first<{ first: number; last: number }>())!;
    // The time: the later half of what was written, then a time nothing was written in.
    for (const [from, to] of [
      [Math.floor((times.first + times.last) / 2), times.last],
      [times.last + 1, times.last + 1000],
    ] as const) {
      const during = { ...ACTIVE, createdAfter: from, createdBefore: to };
      for (const [text, whole] of [
        ["harbour wall", "harbour wall yesterday"],
        ["quillwort", null],
      ] as const) {
        const lists = { terms: blockTerms(t.tenantId, text)!, plain: whole ? blockTerms(t.tenantId, whole)! : null };
        const rows = await blockTimedRows(scope, lists, ACTIVE, during, 100);
        const reference = (
          await timedKeywordStatement(
            scope,
            {
              terms: keywordQueryTerms(t.tenantId, text)!,
              plain: whole ? keywordQueryTerms(t.tenantId, whole)! : null,
            },
            ACTIVE,
            during,
            100,
          ).all<TimedRow>()
        ).results;
        const got = timedLists(rows!, whole !== null);
        const want = timedLists(reference, whole !== null);
        expectSame(got.all, want.all);
        expectSame(got.thenExtra, want.thenExtra);
        expect(got.thenFound).toBe(want.thenFound);
        if (want.unchanged) expectSame(got.unchanged, want.unchanged);
      }
    }
  });

  it("read the rest of a word's blocks only where the bound requires it, and certify the pool exactly", async () => {
    // First trips of one full block: "harbour"'s second is unread, and either its bound leaves the pool certain
    // (the chunks that may reach it are scored from their forward index) or it is read.
    for (const pool of [10, 100, 400, 600])
      for (const query of QUERIES) {
        const read = await blocked(query, ACTIVE, pool, 1);
        expectSame(read.rows, (await exact(query, ACTIVE, pool)).rows);
        expect(read.trips).toBeLessThanOrEqual(3);
      }
    // A pool past the first block's chunks cannot be certified from it: the rest is read (a third trip).
    expect((await blocked("harbour", ACTIVE, 600, 1)).trips).toBe(3);
    // Certified by the bound, the walk is left to run with search's second trip, for the hits the parts known expect.
    const scope = tenantScope(t.db, t.tenantId);
    const pending = await planBlockList(scope, blockTerms(t.tenantId, "quillwort harbour")!, ACTIVE, 20, 1);
    if (pending === null || Array.isArray(pending)) throw new Error("expected a walk still to run");
    const rows = pending.finish(await pending.walk.all());
    expectSame(rows, (await exact("quillwort harbour", ACTIVE, 20)).rows);
    const expected = new Set(pending.expected);
    expect(rows!.every((r) => expected.has(r.chunk_id))).toBe(true);
  });

  it("find chunks written since the blocks (the tail), and a flush takes them in once there are enough", async () => {
    const stored = await call(t.apiKey, "memory_store", {
      content: "Harbour harbour harbour: the harbour master's harbour.",
    });
    for (const query of QUERIES) expectSame((await blocked(query)).rows, (await exact(query)).rows);
    expect((await blocked("harbour")).rows![0]!.chunk_content).toBe(
      "Harbour harbour harbour: the harbour master's harbour.",
    );
    await call(t.apiKey, "memory_batch_store", {
      memories: Array.from({ length: FLUSH_AT + 4 }, (_, i) => ({ content: `Harbour light ${i}, harbour wall.` })),
    });
    await passes();
    const code = keywordCode(t.tenantId);
    const flushes = await t.db
      .prepare("SELECT block, entries FROM keyword_blocks WHERE tenant_id = ? AND term = ? AND block < 0")
      .bind(t.tenantId, `${code}harbour`)
      .all<{ block: number; entries: string }>();
    expect(flushes.results.map((b) => [b.block, decodeEntries(b.entries).length])).toEqual([[-1, FLUSH_AT + 5]]);
    for (const query of [...QUERIES, "harbour light"])
      expectSame((await blocked(query)).rows, (await exact(query)).rows);
    await forget(t, [stored.id]);
  });

  it("leave out chunks deleted or rewritten since, until the next pass builds their words anew", async () => {
    const top = (await exact("harbour")).rows.slice(0, 3);
    const items = [...new Set(top.map((r) => r.item_id))];
    await forget(t, items);
    const recorded = await t.db
      .prepare("SELECT COUNT(*) AS n FROM keyword_block_changes WHERE tenant_id = ?")
      .bind(t.tenantId)
      .first<number>("n");
    expect(recorded).toBeGreaterThanOrEqual(top.length);
    for (const query of QUERIES) expectSame((await blocked(query)).rows, (await exact(query)).rows);
    expect((await blocked("harbour")).rows!.map((r) => r.chunk_id)).not.toContain(top[0]!.chunk_id);
    await passes();
    expect(
      await t.db
        .prepare("SELECT COUNT(*) AS n FROM keyword_block_changes WHERE tenant_id = ?")
        .bind(t.tenantId)
        .first("n"),
    ).toBe(0);
    const code = keywordCode(t.tenantId);
    const left = await t.db
      .prepare("SELECT entries FROM keyword_blocks WHERE tenant_id = ? AND term = ?")
      .bind(t.tenantId, `${code}harbour`)
      .all<{ entries: string }>();
    expect(left.results.flatMap((b) => decodeEntries(b.entries).map((e) => e[0]))).not.toContain(top[0]!.chunk_id);
    for (const query of QUERIES) expectSame((await blocked(query)).rows, (await exact(query)).rows);
  });

  it("score a chunk given a new context from its row until its words are built anew", async () => {
    const target = (await exact("harbour")).rows[5]!;
    const scope = tenantScope(t.db, t.tenantId);
    const row = (await t.db
      .prepare("SELECT id, content, fts_tokens FROM chunks WHERE id = ?")
      .bind(target.chunk_id)
      .first<{ id: number; content: string; fts_tokens: number }>())!;
    // The context (the second column) now names a lighthouse and the harbour again: its frequency and length move.
    await t.db.batch(
      rewriteChunkContexts(scope, [
        { id: row.id, content: row.content, context: "lighthouse harbour", ftsTokens: row.fts_tokens },
      ]),
    );
    expect(
      await t.db.prepare("SELECT COUNT(*) AS n FROM keyword_block_changes WHERE chunk_id = ?").bind(row.id).first("n"),
    ).toBe(1);
    for (const query of [...QUERIES, "lighthouse harbour"])
      expectSame((await blocked(query)).rows, (await exact(query)).rows);
    await passes();
    for (const query of [...QUERIES, "lighthouse harbour"])
      expectSame((await blocked(query)).rows, (await exact(query)).rows);
  });

  it("are the tenant's own: another tenant's same words neither read nor counted", async () => {
    const u = await newTenant();
    await call(u.apiKey, "memory_batch_store", {
      memories: Array.from({ length: 40 }, (_, i) => ({ content: `Harbour quillwort ${i}, the other tenant's.` })),
    });
    await passes(u.db);
    for (const query of QUERIES) expectSame((await blocked(query)).rows, (await exact(query)).rows);
    const found = await blockList(
      tenantScope(u.db, u.tenantId),
      blockTerms(u.tenantId, "harbour quillwort")!,
      ACTIVE,
      100,
    );
    expect(found!.every((r) => r.chunk_content.includes("other tenant"))).toBe(true);
    expect(found).toHaveLength(40);
  });
});

describe("search through the tool, with and without blocks", () => {
  it("answers alike before the blocks are built and after, keyword and hybrid, named times included", async () => {
    const u = await newTenant();
    for (let i = 0; i < 600; i += 100)
      await call(u.apiKey, "memory_batch_store", {
        memories: Array.from({ length: 100 }, (_, k) => ({
          content: `Day ${i + k}: the ferry left the harbour ${k % 3 === 0 ? "late " : ""}with ${k % 11} cars, ${k % 4 === 0 ? "rain" : "sun"}.`,
        })),
      });
    const queries = [
      "ferry harbour",
      "late ferry rain",
      "cars in the harbour yesterday",
      "what did the ferry carry today",
      "sun",
    ];
    const answers = async () => {
      const out = [];
      for (const query of queries)
        for (const mode of ["keyword", "hybrid"])
          out.push((await call(u.apiKey, "search", { query, mode, limit: 10 })).results);
      return out;
    };
    const before = await answers();
    await passes(u.db);
    const blocks = await u.db
      .prepare("SELECT COUNT(*) AS n FROM keyword_blocks WHERE tenant_id = ?")
      .bind(u.tenantId)
      .first<number>("n");
    expect(blocks).toBeGreaterThan(0);
    expect(await answers()).toEqual(before);
    expect(before.filter((results) => results.length > 0).length).toBeGreaterThan(queries.length);
  });
});

describe("the posting blocks pass at rest", () => {
  it("reads the write counter's row alone while nothing was written, and looks again after a write", async () => {
    const u = await newTenant();
    await call(u.apiKey, "memory_batch_store", { memories: [{ content: "The harbour log, entry one." }] });
    await passes(u.db);
    const meter = new UnitMeter();
    const d1 = meteredD1(u.db, meter);
    expect(await refreshPostingBlocks(d1, Date.now())).toBe(0);
    expect(meter.current).toMatchObject({ d1RowsRead: 1, d1RowsWritten: 0 });
    await call(u.apiKey, "memory_batch_store", { memories: [{ content: "The harbour log, entry two." }] });
    const before = meter.current.d1RowsRead;
    await refreshPostingBlocks(d1, Date.now());
    expect(meter.current.d1RowsRead - before).toBeGreaterThan(1);
    const marks = (await readKeywordMarks(u.db))!;
    expect(marks.topsWritten).toBe(marks.written);
  });
});
