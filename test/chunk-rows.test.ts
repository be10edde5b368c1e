import { env } from "cloudflare:workers";
import { expect, it } from "vitest";
import { shardDatabase } from "../src/control/shards";
import { type ChunkRow, insertChunkRows } from "../src/core/memory/chunk-rows";
import { tenantScope } from "../src/db/scope";

it("splits rows into statements under D1's 2 MB value limit, and each keyword row lands on its own chunk", async () => {
  const db = shardDatabase(env, "SHARD_0");
  const scope = tenantScope(db, `chunk-rows-${crypto.randomUUID()}`);
  const row = (itemId: string, index: number, size: number): ChunkRow => {
    const word = `w${itemId}x${index}`;
    const content = `${word} ${"é".repeat(size)}`;
    return {
      itemId,
      index,
      content,
      context: "ctx",
      tokens: 3,
      ftsContent: `${word} ${"é".repeat(size)}`,
      ftsContext: "ctx",
      ftsTokens: 2,
      termFreqs: ` ${word} `,
      statedTimes: "[]",
    };
  };
  const rows = [row("a", 0, 10), row("a", 1, 250_000), row("b", 0, 250_000), row("c", 0, 10)];
  const statements = insertChunkRows(scope, rows);
  // Each large row is ~500k JSON characters (text and keyword text), so they cannot share an array: [a0, a1], [b0, c0],
  // each group three statements: its chunks, the shard's chunk id counter, its keyword rows.
  expect(statements).toHaveLength(6);
  const counter = () => db.prepare("SELECT next_chunk_id AS n FROM shard_identity WHERE id = 1").first<number>("n");
  const first = (await counter())!;
  await db.batch(statements);
  // Ids come from the shard's own counter, in order, and move it past them.
  const ids = (
    await db.prepare("SELECT id FROM chunks WHERE tenant_id = ? ORDER BY id").bind(scope.tenantId).all<{ id: number }>()
  ).results.map((r) => r.id);
  expect(ids).toEqual([first, first + 1, first + 2, first + 3]);
  expect(await counter()).toBe(first + 4);
  const { results } = await db
    .prepare(
      "SELECT c.item_id, c.chunk_index, c.tokens, c.fts_tokens, c.term_freqs, substr(f.content, 1, 8) AS fts FROM chunks c JOIN chunks_fts f ON f.rowid = c.id WHERE c.tenant_id = ? ORDER BY c.item_id, c.chunk_index",
    )
    .bind(scope.tenantId)
    .all();
  expect(results).toEqual([
    { item_id: "a", chunk_index: 0, tokens: 3, fts_tokens: 2, term_freqs: " wax0 ", fts: "wax0 ééé" },
    { item_id: "a", chunk_index: 1, tokens: 3, fts_tokens: 2, term_freqs: " wax1 ", fts: "wax1 ééé" },
    { item_id: "b", chunk_index: 0, tokens: 3, fts_tokens: 2, term_freqs: " wbx0 ", fts: "wbx0 ééé" },
    { item_id: "c", chunk_index: 0, tokens: 3, fts_tokens: 2, term_freqs: " wcx0 ", fts: "wcx0 ééé" },
  ]);
});
