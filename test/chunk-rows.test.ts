import { env } from "cloudflare:workers";
import { expect, it } from "vitest";
import { insertChunkRows, type ChunkRow } from "../src/core/memory/chunk-rows";
import { tenantScope } from "../src/db/scope";

it("splits rows into statements under D1's 2 MB value limit, and each keyword row lands on its own chunk", async () => {
  const scope = tenantScope(env.DB, `chunk-rows-${crypto.randomUUID()}`);
  const row = (itemId: string, index: number, size: number): ChunkRow => {
    const word = `w${itemId}x${index}`;
    const content = `${word} ${"é".repeat(size)}`;
    return { itemId, index, content, context: "ctx", tokens: 3, ftsContent: `${word} ${"é".repeat(size)}`, ftsContext: "ctx", ftsTokens: 2 };
  };
  const rows = [row("a", 0, 10), row("a", 1, 250_000), row("b", 0, 250_000), row("c", 0, 10)];
  const statements = insertChunkRows(scope, rows);
  // Each large row is ~500k JSON characters (text and keyword text), so they cannot share an array: [a0, a1], [b0, c0].
  expect(statements).toHaveLength(4);
  await env.DB.batch(statements);
  const { results } = await env.DB.prepare(
    "SELECT c.item_id, c.chunk_index, c.tokens, c.fts_tokens, substr(f.content, 1, 8) AS fts FROM chunks c JOIN chunks_fts f ON f.rowid = c.id WHERE c.tenant_id = ? ORDER BY c.item_id, c.chunk_index",
  )
    .bind(scope.tenantId)
    .all();
  expect(results).toEqual([
    { item_id: "a", chunk_index: 0, tokens: 3, fts_tokens: 2, fts: "wax0 ééé" },
    { item_id: "a", chunk_index: 1, tokens: 3, fts_tokens: 2, fts: "wax1 ééé" },
    { item_id: "b", chunk_index: 0, tokens: 3, fts_tokens: 2, fts: "wbx0 ééé" },
    { item_id: "c", chunk_index: 0, tokens: 3, fts_tokens: 2, fts: "wcx0 ééé" },
  ]);
});
