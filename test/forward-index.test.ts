import { describe, expect, it } from "vitest";
import { FORWARD_BATCH, fillForwardIndex } from "../src/core/keyword-index/indexing";
import { forwardFreq, forwardFreqSql, forwardKey } from "../src/core/keyword-index/term-freqs";
import { keywordCode } from "../src/shared/fts-text";
import { call, newTenant, tenantDb } from "./helpers";

/**
 * The forward index (chunks.term_freqs, src/core/keyword-index/term-freqs.ts), which posting blocks score the tails and
 * the unread parts from (keyword-blocks.test.ts).
 */

const DOCS = [
  "Running runners ran quickly; generalizations, agreed feed sing is as yes yellow sky.",
  "Café naïve RÉSUMÉ Ærøskøbing łódź Straße İstanbul Ελληνικά ς Москва ёлка हिन्दी ภาษาไทย العربية Tiếng Việt",
  "東京タワーの近くの庭で、東京の夜景を見た。 한국어 ＦＵＬＬ x² 3.14159 2026-11-22 µm e\u0301te\u0301",
  "Garden notes: water the tomatoes, prune the roses, check the garden hose and the garden gate.",
  "The zephyrine lamp in the garden flickers at dusk; the lamp is old.",
];

describe("the forward index", () => {
  it("holds every term of a chunk's keyword row with its BM25 frequency, as the postings do", async () => {
    const t = await newTenant();
    await call(t.apiKey, "memory_batch_store", {
      memories: DOCS.map((content, i) => ({ content, tags: [`tag${i}`] })),
    });
    // Messages index a second column (the speaker and the turn answered), weighted 0.5.
    for (const [role, content] of [
      ["user", "Where is the zephyrine lamp? The lamp, the LAMP!"],
      ["assistant", "In the garden, by the zephyrine post."],
    ]) {
      await call(t.apiKey, "log_chat", { conversation_id: "c1", role, content });
    }
    const db = await tenantDb(t.tenantId);
    const code = keywordCode(t.tenantId);
    const { results: postings } = await db
      .prepare(
        `SELECT v.doc, v.term, SUM(CASE v.col WHEN 'content' THEN 1.0 ELSE 0.5 END) AS f FROM chunks c CROSS JOIN chunks_fts_instance v
         WHERE c.tenant_id = ? AND v.doc = c.id AND substr(v.term, 1, 6) = ? GROUP BY v.doc, v.term`,
      )
      .bind(t.tenantId, code)
      .all<{ doc: number; term: string; f: number }>();
    const expected = new Map<number, Map<string, number>>();
    for (const p of postings) {
      const key = forwardKey(code, p.term);
      if (key !== null) (expected.get(p.doc) ?? expected.set(p.doc, new Map()).get(p.doc)!).set(key, p.f);
    }
    const { results: chunks } = await db
      .prepare("SELECT id, term_freqs FROM chunks WHERE tenant_id = ?")
      .bind(t.tenantId)
      .all<{ id: number; term_freqs: string }>();
    expect(chunks).toHaveLength(DOCS.length + 2);
    for (const chunk of chunks) {
      const held = new Map(
        chunk.term_freqs
          .trim()
          .split(" ")
          .map((entry) => [entry.split(":")[0]!, Number(entry.split(":")[1] ?? 1)]),
      );
      expect(held, chunk.term_freqs).toEqual(expected.get(chunk.id));
    }
    expect([
      postings.some((p) => p.f === 1.5),
      postings.some((p) => p.f === 0.5),
      postings.some((p) => p.f >= 3),
    ]).toEqual([true, true, true]);

    // SQL reads each of them back as the postings give it, and a term the chunk lacks as NULL.
    const { results: read } = await db
      .prepare(
        `SELECT j.value ->> 1 AS expected, ${forwardFreqSql("c.term_freqs", "(' ' || (j.value ->> 2) || ' ')", "(' ' || (j.value ->> 2) || ':')")} AS f
         FROM json_each(?) j CROSS JOIN chunks c WHERE c.id = j.value ->> 0`,
      )
      .bind(
        JSON.stringify([
          ...[...expected].flatMap(([doc, terms]) => [...terms].map(([key, f]): unknown[] => [doc, f, key])),
          [chunks[0]!.id, null, "absentword"],
        ]),
      )
      .all<{ expected: number | null; f: number | null }>();
    expect(read.length).toBeGreaterThan(60);
    for (const r of read) expect(r.f).toBe(r.expected);
    // So does the worker (relevance feedback: feedback-scores.ts), an absent term as 0.
    const freqsOf = new Map(chunks.map((c) => [c.id, c.term_freqs]));
    for (const [doc, terms] of expected)
      for (const [key, f] of terms) expect(forwardFreq(freqsOf.get(doc)!, key)).toBe(f);
    expect(forwardFreq(chunks[0]!.term_freqs, "absentword")).toBe(0);
    // A key that begins a longer one ("lamp" in " lampshade:2 lamp ") is found as itself.
    expect([
      forwardFreq(" lampshade:2 lamp ", "lamp"),
      forwardFreq(" lampshade lamp:1.5 ", "lamp"),
      forwardFreq(" lampshade ", "lamp"),
    ]).toEqual([1, 1.5, 0]);
    // A key that ends another term is that term's tail, not the key.
    expect([
      forwardFreq(" outlamp:2 lamp:3 ", "lamp"),
      forwardFreq(" outlamp ", "lamp"),
      forwardFreq(" outlamp:2 ", "lamp"),
    ]).toEqual([3, 0, 0]);
  });

  it("is filled by the re-index sweep for chunks written without one", async () => {
    const t = await newTenant();
    await call(t.apiKey, "memory_batch_store", { memories: DOCS.map((content) => ({ content })) });
    const db = await tenantDb(t.tenantId);
    const { results: written } = await db
      .prepare("SELECT id, term_freqs FROM chunks WHERE tenant_id = ? ORDER BY id")
      .bind(t.tenantId)
      .all<{ id: number; term_freqs: string }>();
    // As if written before migration 0016.
    await db.prepare("UPDATE chunks SET term_freqs = NULL WHERE tenant_id = ?").bind(t.tenantId).run();
    let filled = 0;
    while (true) {
      const n = await fillForwardIndex(db, 2);
      if (n === 0) break;
      filled += n;
    }
    expect(filled).toBe(DOCS.length);
    const { results: after } = await db
      .prepare("SELECT id, term_freqs FROM chunks WHERE tenant_id = ? ORDER BY id")
      .bind(t.tenantId)
      .all();
    expect(after).toEqual(written);
    expect(FORWARD_BATCH).toBeGreaterThan(2);
  });
});
