import type { Config } from "../../config";
import { sha256Hex } from "../../crypto";
import { projectClause, type TenantScope } from "../../db/scope";
import { dot, fromBytes, toBytes } from "../../shared/vector-math";
import { currentGeneration } from "./cache-generation";

/**
 * Semantic cache for built contexts. D1's cache_entries is the index (project, generation, parameters,
 * query vector, size, the items whose links it followed) and holds the values up to CACHE_VALUE_IN_D1 bytes; KV
 * holds larger ones. D1, because the entry's row is written anyway, so its value costs no further write, where a KV
 * value costs one: the Free plan allows 1,000 KV writes a day against 100,000 D1 rows, and on Paid a KV write costs
 * five times a D1 row ($5 against $1 a million). A lookup is a hit when
 * the parameters match, the entry's generation is the project's current one (any write bumps it, see
 * cache-generation.ts), no link of its items changed since it was built, and the query embeddings'
 * cosine reaches the threshold.
 */
export interface CacheLookup<T> {
  value: T | null;
  /** The generation the caller's freshly built value belongs to (pass it to storeCached). */
  generation: number;
  /** The tenant's link clock, read before the build (pass it to storeCached). */
  linkSeq: number;
}

/** SQL true when a link of an item the entry `e` followed changed after it was built (?1 = tenant). */
const LINKS_CHANGED = `EXISTS (SELECT 1 FROM json_each(e.link_items) j CROSS JOIN cache_link_marks m
  WHERE m.tenant_id = ?1 AND m.item_id = j.value AND m.seq > e.link_seq)`;

/**
 * Largest value kept in D1 (UTF-8 bytes): a row this size still fits a tenant move's write statement (its JSON under
 * 600,000 characters) and D1's 2 MB a value; a context of a larger token budget goes to KV.
 */
export const CACHE_VALUE_IN_D1 = 150_000;

export interface CacheStats {
  size: number;
  hitCount: number;
  missCount: number;
  bytes: number;
}

export async function paramsHash(params: unknown): Promise<string> {
  return (await sha256Hex(JSON.stringify(params))).slice(0, 32);
}

export async function lookupCached<T>(
  scope: TenantScope,
  kv: KVNamespace,
  config: Config["cache"],
  project: string,
  params: string,
  vector: Float32Array,
): Promise<CacheLookup<T>> {
  const now = Date.now();
  const { results } = await scope.d1
    .prepare(
      `SELECT g.generation AS current, g.link_seq, e.key, e.vector, e.value IS NOT NULL AS in_d1
       FROM (SELECT ${currentGeneration("?1", "?2")} AS generation,
                    COALESCE((SELECT seq FROM cache_link_clock WHERE tenant_id = ?1), 0) AS link_seq) g
       LEFT JOIN cache_entries e ON e.tenant_id = ?1 AND e.project = ?2 AND e.generation = g.generation AND e.params_hash = ?3 AND e.expires_at > ?4
         AND NOT ${LINKS_CHANGED}`,
    )
    .bind(scope.tenantId, project, params, now)
    .all<{ current: number; link_seq: number; key: string | null; vector: ArrayBuffer | null; in_d1: number | null }>();
  const generation = results[0]?.current ?? 0;
  const linkSeq = results[0]?.link_seq ?? 0;
  let best: { key: string; similarity: number; inD1: boolean } | null = null;
  for (const row of results) {
    if (row.key === null || row.vector === null) continue;
    const stored = fromBytes(row.vector);
    if (stored.length !== vector.length) continue;
    const similarity = dot(vector, stored);
    if (similarity >= config.similarityThreshold && (!best || similarity > best.similarity))
      best = { key: row.key, similarity, inD1: row.in_d1 === 1 };
  }
  // A store failing is a miss, never an error or a stale answer: the context is built afresh.
  const value = best
    ? await readValue<T>(scope, kv, best.key, best.inD1).catch(
        (error: unknown) => (console.error("cache read failed; building afresh", error), null),
      )
    : null;
  return { value, generation, linkSeq };
}

async function readValue<T>(scope: TenantScope, kv: KVNamespace, key: string, inD1: boolean): Promise<T | null> {
  if (!inD1) return kv.get<T>(key, "json");
  const json = await scope.d1
    .prepare("SELECT value FROM cache_entries WHERE tenant_id = ? AND key = ?")
    .bind(scope.tenantId, key)
    .first<string | null>("value");
  return typeof json === "string" ? (JSON.parse(json) as T) : null;
}

export async function storeCached(
  scope: TenantScope,
  kv: KVNamespace,
  config: Config["cache"],
  entry: {
    project: string;
    params: string;
    generation: number;
    linkSeq: number;
    linkItems: readonly string[];
    query: string;
    vector: Float32Array;
    value: unknown;
  },
): Promise<void> {
  const now = Date.now();
  const json = JSON.stringify(entry.value);
  // Hashed parts keep the key within KV's 512 bytes whatever the namespace holds (200 letters of any script).
  const [project, query] = await Promise.all([sha256Hex(entry.project), sha256Hex(entry.query)]);
  const key = `ctx:${scope.tenantId}:${project.slice(0, 16)}:${entry.generation}:${entry.params}:${query.slice(0, 16)}`;
  const bytes = new TextEncoder().encode(json).length;
  const inD1 = bytes <= CACHE_VALUE_IN_D1;
  if (!inD1) await kv.put(key, json, { expirationTtl: config.ttlSeconds });
  const [, stale, evicted] = await scope.d1.batch<{ key: string; in_kv: number }>([
    scope.d1
      .prepare(
        `INSERT INTO cache_entries (tenant_id, key, project, generation, params_hash, query, vector, bytes, created_at, expires_at, link_seq, link_items, value)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
         ON CONFLICT (tenant_id, key) DO UPDATE SET vector = excluded.vector, bytes = excluded.bytes, created_at = excluded.created_at, expires_at = excluded.expires_at,
           link_seq = excluded.link_seq, link_items = excluded.link_items, value = excluded.value`,
      )
      .bind(
        scope.tenantId,
        key,
        entry.project,
        entry.generation,
        entry.params,
        entry.query.slice(0, 1000),
        toBytes(entry.vector),
        bytes,
        now,
        now + config.ttlSeconds * 1000,
        entry.linkSeq,
        JSON.stringify(entry.linkItems),
        inD1 ? json : null,
      ),
    staleEntries(scope, now),
    // Size bound: the oldest entries go first.
    scope.d1
      .prepare(
        `DELETE FROM cache_entries WHERE tenant_id = ?1 AND key IN (SELECT key FROM cache_entries WHERE tenant_id = ?1 ORDER BY created_at DESC LIMIT -1 OFFSET ?2) RETURNING ${RETURNED}`,
      )
      .bind(scope.tenantId, config.maxSize),
  ]);
  await deleteCacheValues(kv, kvKeys([...stale!.results, ...evicted!.results]));
}

/** What a deletion of entries returns: each key, and whether its value is in KV (to delete there too). */
export const RETURNED = "key, value IS NULL AS in_kv";
export const kvKeys = (rows: readonly { key: string; in_kv: number }[]) =>
  rows.filter((r) => r.in_kv === 1).map((r) => r.key);

/**
 * Expired and superseded entries (an older generation than their project's, or links of their items
 * changed) leave the index and KV together: a superseded value may quote what a write since then
 * changed or deleted.
 */
function staleEntries(scope: TenantScope, now: number): D1PreparedStatement {
  return scope.d1
    .prepare(
      `DELETE FROM cache_entries AS e WHERE e.tenant_id = ?1
         AND (e.expires_at <= ?2 OR e.generation < ${currentGeneration("?1", "e.project")} OR ${LINKS_CHANGED})
       RETURNING ${RETURNED}`,
    )
    .bind(scope.tenantId, now);
}

/** Removes the tenant's superseded and expired entries from the index and their values from KV. */
export async function dropStaleCacheEntries(scope: TenantScope, kv: KVNamespace): Promise<number> {
  const { results } = await staleEntries(scope, Date.now()).all<{ key: string; in_kv: number }>();
  await deleteCacheValues(kv, kvKeys(results));
  return results.length;
}

/** KV values by key, a few at a time (each is one KV call). */
export async function deleteCacheValues(kv: KVNamespace, keys: readonly string[]): Promise<void> {
  for (let i = 0; i < keys.length; i += KV_DELETES_IN_FLIGHT)
    await Promise.all(keys.slice(i, i + KV_DELETES_IN_FLIGHT).map((key) => kv.delete(key)));
}
const KV_DELETES_IN_FLIGHT = 50;

/** The prefix of every KV key of a tenant's cache, or of one of its projects (see storeCached). */
export async function cacheKeyPrefix(tenantId: string, project?: string): Promise<string> {
  return project === undefined ? `ctx:${tenantId}:` : `ctx:${tenantId}:${(await sha256Hex(project)).slice(0, 16)}:`;
}

export async function countCacheOutcome(scope: TenantScope, hit: boolean): Promise<void> {
  await scope.d1
    .prepare(
      `INSERT INTO cache_counters (tenant_id, hits, misses) VALUES (?, ?, ?) ON CONFLICT (tenant_id) DO UPDATE SET hits = hits + excluded.hits, misses = misses + excluded.misses`,
    )
    .bind(scope.tenantId, hit ? 1 : 0, hit ? 0 : 1)
    .run();
}

/** Live entries only: unexpired, of their project's current generation, their items' links unchanged. */
export async function cacheStats(scope: TenantScope): Promise<CacheStats> {
  const [entries, counters] = await scope.d1.batch<Record<string, number | null>>([
    scope.d1
      .prepare(
        `SELECT COUNT(*) AS size, COALESCE(SUM(e.bytes), 0) AS bytes FROM cache_entries e
         WHERE e.tenant_id = ?1 AND e.expires_at > ?2
           AND e.generation = ${currentGeneration("?1", "e.project")} AND NOT ${LINKS_CHANGED}`,
      )
      .bind(scope.tenantId, Date.now()),
    scope.d1.prepare("SELECT hits, misses FROM cache_counters WHERE tenant_id = ?").bind(scope.tenantId),
  ]);
  const e = entries!.results[0] ?? {};
  const c = counters!.results[0] ?? {};
  return { size: e.size ?? 0, bytes: e.bytes ?? 0, hitCount: c.hits ?? 0, missCount: c.misses ?? 0 };
}

/**
 * Removes entries from the index (so they can never be served again) and their values from KV; with a
 * pattern, only those whose query or project matches it (`*` and `?` wildcards; no wildcard = substring).
 */
export async function clearCache(scope: TenantScope, kv: KVNamespace, pattern: string | null): Promise<number> {
  // A project-limited key clears entries of its own projects only.
  const own = projectClause(scope, "project");
  if (pattern === null) {
    const { results } = await scope.d1
      .prepare(`DELETE FROM cache_entries WHERE tenant_id = ?${own.sql} RETURNING ${RETURNED}`)
      .bind(scope.tenantId, ...own.params)
      .all<{ key: string; in_kv: number }>();
    await deleteCacheValues(kv, kvKeys(results));
    return results.length;
  }
  // Matched here, not with SQL GLOB: D1 refuses GLOB patterns over 50 bytes, and a tenant's index is
  // bounded by LLM_MEMORY_CACHE_MAX_SIZE rows, so reading its keys is cheap.
  const glob = [...(/[*?]/.test(pattern) ? pattern : `*${pattern}*`)];
  const { results } = await scope.d1
    .prepare(`SELECT key, query, project FROM cache_entries WHERE tenant_id = ?${own.sql}`)
    .bind(scope.tenantId, ...own.params)
    .all<{ key: string; query: string; project: string }>();
  const lowered = glob.map((ch) => ch.toLowerCase());
  const keys = results
    .filter((r) => globMatches(lowered, [...r.query.toLowerCase()]) || globMatches(glob, [...r.project]))
    .map((r) => r.key);
  if (keys.length === 0) return 0;
  const deleted = await scope.d1
    .prepare(
      `DELETE FROM cache_entries WHERE tenant_id = ? AND key IN (SELECT value FROM json_each(?)) RETURNING ${RETURNED}`,
    )
    .bind(scope.tenantId, JSON.stringify(keys))
    .all<{ key: string; in_kv: number }>();
  await deleteCacheValues(kv, kvKeys(deleted.results));
  return deleted.results.length;
}

/**
 * `*` any run, `?` one character, the rest literal. The greedy two-pointer walk backtracks only to the
 * last `*`, so it takes O(pattern × text) steps whatever the pattern: no regular expression to blow up.
 */
export function globMatches(pattern: readonly string[], text: readonly string[]): boolean {
  let p = 0;
  let t = 0;
  let star = -1;
  let resume = 0;
  while (t < text.length) {
    if (p < pattern.length && (pattern[p] === "?" || (pattern[p] !== "*" && pattern[p] === text[t]))) {
      p++;
      t++;
    } else if (p < pattern.length && pattern[p] === "*") {
      star = p++;
      resume = t;
    } else if (star !== -1) {
      p = star + 1;
      t = ++resume;
    } else {
      return false;
    }
  }
  while (p < pattern.length && pattern[p] === "*") p++;
  return p === pattern.length;
}
