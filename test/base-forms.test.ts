import { describe, expect, it } from "vitest";
import { REINDEX_BATCH, reindexLegacyBatches, reindexOutdatedChunks } from "../src/core/keyword-index/indexing";
import { checkedD1 } from "../src/db/checked-d1";
import { withQueryBudget } from "../src/db/invocation-queries";
import { baseForm, KEYWORD_VERSION } from "../src/shared/base-forms";
import { indexTokens, keywordCode, queryPhrases, storedTerm, tenantIndexText } from "../src/shared/fts-text";
import { call, newTenant, tenantDb } from "./helpers";

/** Irregular inflections joined to their base form (src/shared/base-forms.ts), in the index and in queries alike. */

const MEMORIES = [
  "Yesterday I bought a red kayak and we went to the lake with the children.",
  "I will buy paint for the fence next week.",
  "Maria wrote three letters to her grandmother.",
  "The committee found a new chair for the garden club.",
];
const ids = (response: { results: { content: string }[] }) => response.results.map((r) => MEMORIES.indexOf(r.content));

describe("base forms", () => {
  it("map irregular forms, whatever their case, and leave other words and ambiguous forms alone", () => {
    expect(
      [
        "bought",
        "Went",
        "GONE",
        "children",
        "wrote",
        "written",
        "buy",
        "kayak",
        "found",
        "left",
        "saw",
        "was",
        "did",
      ].map(baseForm),
    ).toEqual(["buy", "go", "go", "child", "write", "write", "buy", "kayak", "found", "left", "saw", "was", "did"]);
    // A query asking with either form looks up one term, once.
    expect(queryPhrases("What did Melanie buy? She BOUGHT what?")).toEqual([["melanie"], ["buy"]]);
    const code = keywordCode("tn_base_forms");
    expect(tenantIndexText(code, "We went; they had gone.").text).toBe(
      `${code}We ${code}go; ${code}they ${code}had ${code}go.`,
    );
    expect(indexTokens("Mice ran").map((t) => storedTerm(code, t))).toEqual([
      storedTerm(code, "mouse"),
      storedTerm(code, "run"),
    ]);
  });

  it("let a search find a memory by another form of its words, in both directions", async () => {
    const t = await newTenant();
    await call(t.apiKey, "memory_batch_store", { memories: MEMORIES.map((content) => ({ content })) });
    for (const mode of ["keyword", "hybrid"]) {
      expect(ids(await call(t.apiKey, "search", { query: "What did she buy?", mode })).sort()).toEqual([0, 1]);
      expect(ids(await call(t.apiKey, "search", { query: "paint that was bought", mode }))[0]).toBe(1);
      expect(ids(await call(t.apiKey, "search", { query: "where did they go with the child", mode }))[0]).toBe(0);
      expect(ids(await call(t.apiKey, "search", { query: "letters Maria writes", mode }))[0]).toBe(2);
    }
    // "found" keeps its own meaning: a search for "find" does not take it for one.
    expect(ids(await call(t.apiKey, "search", { query: "find", mode: "keyword" }))).toEqual([]);
  });

  it("are given to chunks indexed before them by the re-index sweep, leaving the rows as a fresh write makes them", async () => {
    const t = await newTenant();
    await call(t.apiKey, "memory_batch_store", { memories: MEMORIES.map((content) => ({ content })) });
    const db = await tenantDb(t.tenantId);
    const code = keywordCode(t.tenantId);
    const rows = async () =>
      (
        await db
          .prepare(
            `SELECT c.id, c.fts_tokens, c.term_freqs, c.keyword_version, f.content, f.context FROM chunks c JOIN chunks_fts f ON f.rowid = c.id
             WHERE c.tenant_id = ? ORDER BY c.id`,
          )
          .bind(t.tenantId)
          .all()
      ).results;
    const stats = () =>
      db
        .prepare("SELECT chunks, tokens, legacy_chunks FROM keyword_stats WHERE tenant_id = ?")
        .bind(t.tenantId)
        .first();
    const written = await rows();
    const statsWritten = await stats();
    expect(written.every((r) => r.keyword_version === KEYWORD_VERSION)).toBe(true);

    // As written before migration 0021: every word as it stands, the forward index too, and no version.
    const { results: chunks } = await db
      .prepare("SELECT id, content FROM chunks WHERE tenant_id = ?")
      .bind(t.tenantId)
      .all<{ id: number; content: string }>();
    for (const chunk of chunks) {
      const asWritten = chunk.content.replace(/[\p{L}\p{N}]+/gu, (token) => code + token);
      await db.batch([
        db.prepare("DELETE FROM chunks_fts WHERE rowid = ?").bind(chunk.id),
        db.prepare("INSERT INTO chunks_fts (rowid, content, context) VALUES (?, ?, '')").bind(chunk.id, asWritten),
        db.prepare("UPDATE chunks SET keyword_version = NULL, term_freqs = ' bought ' WHERE id = ?").bind(chunk.id),
      ]);
    }
    // A word with posting blocks, so the rewrites are recorded for them.
    await db
      .prepare(
        "INSERT INTO keyword_blocks (tenant_id, term, block, max_impact, avgdl, through, entries) VALUES (?, 'x', 0, 1, 1, 0, '[]')",
      )
      .bind(t.tenantId)
      .run();
    // Meanwhile the old rows answer to their own words, but not to the base form a query now asks for.
    expect(ids(await call(t.apiKey, "search", { query: "kayak", mode: "keyword" }))).toEqual([0]);
    expect(ids(await call(t.apiKey, "search", { query: "bought", mode: "keyword" }))).toEqual([1]);

    expect(await reindexOutdatedChunks(db, 3)).toBe(3);
    // An invocation's D1 queries that cover one batch: it runs, and the chain goes on in the next (no refused query).
    const checked = checkedD1(db);
    await expect(withQueryBudget(8, () => reindexLegacyBatches(checked, 10))).resolves.toBe(true);
    expect(await withQueryBudget(50, () => reindexLegacyBatches(checked, 10))).toBe(false);
    expect(await reindexOutdatedChunks(db)).toBe(0);
    expect(await rows()).toEqual(written);
    expect(await stats()).toEqual(statsWritten);
    // Every rewritten chunk is recorded for the posting blocks, which hold its old terms (the next pass builds them anew).
    const recorded = await db
      .prepare("SELECT COUNT(DISTINCT chunk_id) AS n FROM keyword_block_changes WHERE tenant_id = ?")
      .bind(t.tenantId)
      .first<{ n: number }>();
    expect(recorded!.n).toBe(chunks.length);
    expect(ids(await call(t.apiKey, "search", { query: "bought", mode: "keyword" })).sort()).toEqual([0, 1]);
    expect(REINDEX_BATCH).toBeGreaterThan(3);
  });
});
