import { sha256Hex } from "../../crypto";
import { IN_JSON, type TenantScope } from "../../db/scope";
import { AppError } from "../../errors";
import type { Services } from "../../ports";
import type { NewItem, WrittenItem } from "./item-types";
import { writeItems } from "./items";

/** Longest idempotency key a client may send, in characters. */
export const MAX_IDEMPOTENCY_KEY_CHARS = 200;
/** How long a key stands for its first call: a repeat within it is a retry, after it a new call. */
export const IDEMPOTENCY_WINDOW_MS = 24 * 60 * 60_000;
/** Expired keys one sweep statement deletes. */
export const EXPIRED_KEYS_PER_STATEMENT = 1000;

/**
 * `WHERE` of a project's keys (with tenant and project bound): the table has no project column, and a key's stored
 * response names the project its call wrote to.
 */
export const KEYS_OF_PROJECT = "tenant_id = ? AND json_extract(response, '$.project') = ?";

/** A write a client may send again: its key, what it asks (the tool and its arguments but the key), its project. */
export interface KeyedCall {
  key: string;
  tool: string;
  args: Record<string, unknown>;
  project: string;
}

interface HashedCall {
  key: string;
  hash: string;
  project: string;
}

interface StoredCall {
  hash: string;
  response: string;
}

/**
 * Runs writes that may carry idempotency keys, so that each key's call is stored once. A key seen within the last
 * IDEMPOTENCY_WINDOW_MS answers its first call's stored result and writes nothing; with another tool or other
 * arguments it is a CONFLICT. `write` stores the calls at `pending` (indexes into `calls`) and answers their results in
 * that order, committing `alsoInBatch(results)` in the same D1 batch: the calls are stored with their keys or not at
 * all. A concurrent call that stored one of the keys first makes that batch fail on the key; then the keys are read
 * again and the call answers as a repeat (a repeat within one group answers the result of its first occurrence).
 */
export async function oncePerKey<T>(
  scope: TenantScope,
  calls: readonly (KeyedCall | undefined)[],
  write: (pending: number[], alsoInBatch: (results: readonly T[]) => D1PreparedStatement[]) => Promise<T[]>,
): Promise<T[]> {
  const hashed = await Promise.all(calls.map((call) => (call ? hashCall(call) : undefined)));
  const everyCall = calls.map((_, i) => i);
  if (hashed.every((h) => h === undefined)) return write(everyCall, () => []);
  for (let attempt = 1; ; attempt++) {
    const now = Date.now();
    const keys = [...new Set(hashed.flatMap((h) => (h ? [h.key] : [])))];
    const stored = await storedCalls(scope, keys, now);
    const results: T[] = new Array(calls.length);
    const pending: number[] = [];
    /** A later call of a key the group writes -> the index of the call that writes it. */
    const repeats = new Map<number, number>();
    const writer = new Map<string, number>();
    for (const [i, call] of hashed.entries()) {
      const found = call && stored.get(call.key);
      const first = call && writer.get(call.key);
      if (found) results[i] = replay<T>(call, found);
      else if (call && first !== undefined) {
        if (hashed[first]!.hash !== call.hash) throw keyConflict(call.key);
        repeats.set(i, first);
      } else {
        if (call) writer.set(call.key, i);
        pending.push(i);
      }
    }
    try {
      if (pending.length > 0) {
        const written = await write(pending, (answers) =>
          keyStatements(
            scope,
            pending.flatMap((index, j) => {
              const call = hashed[index];
              return call ? [{ call, result: answers[j]! }] : [];
            }),
            now,
          ),
        );
        pending.forEach((index, j) => (results[index] = written[j]!));
      }
      for (const [index, first] of repeats) results[index] = results[first]!;
      return results;
    } catch (error) {
      if (!isKeyTaken(error)) throw error;
      // A concurrent call stored the key between our read and our batch: read again. A second loss can only come
      // from a row the first read took to be expired (clocks a day apart); the client's retry then settles it.
      if (attempt >= 2)
        throw new AppError("CONFLICT", "A call with the same idempotency_key was stored concurrently; retry the call", {
          parameter: "idempotency_key",
        });
    }
  }
}

/** writeItems for calls of one item each that may carry keys (log_chat): a repeated key answers its stored item. */
export function writeItemsOncePerKey(
  scope: TenantScope,
  services: Services,
  items: readonly NewItem[],
  calls: readonly (KeyedCall | undefined)[],
): Promise<WrittenItem[]> {
  return oncePerKey<WrittenItem>(scope, calls, (pending, alsoInBatch) =>
    writeItems(
      scope,
      services,
      pending.map((i) => items[i]!),
      { alsoInBatch },
    ),
  );
}

/**
 * One bounded pass of expiry over a shard: deletes up to `statements` × EXPIRED_KEYS_PER_STATEMENT keys older than
 * the window, oldest first, walking the created_at index (nothing expired: it reads one index entry). A tenant frozen
 * for a move is left alone (its fence refuses the delete, which would abort the whole statement); the next pass after
 * the move takes its keys. Answers how many it deleted.
 */
export async function deleteExpiredKeys(d1: D1Database, now: number, statements: number): Promise<number> {
  let deleted = 0;
  for (let i = 0; i < statements; i++) {
    const result = await d1
      .prepare(
        `DELETE FROM idempotency_keys WHERE rowid IN (
           SELECT rowid FROM idempotency_keys WHERE created_at <= ?1
             AND tenant_id NOT IN (SELECT tenant_id FROM tenant_fences WHERE state = 'frozen')
           ORDER BY created_at LIMIT ?2)`,
      )
      .bind(now - IDEMPOTENCY_WINDOW_MS, EXPIRED_KEYS_PER_STATEMENT)
      .run();
    deleted += result.meta.changes;
    if (result.meta.changes < EXPIRED_KEYS_PER_STATEMENT) break;
  }
  return deleted;
}

/** The request hash: SHA-256 of the tool and its arguments (the key left out), with object keys in a fixed order. */
async function hashCall(call: KeyedCall): Promise<HashedCall> {
  return { key: call.key, hash: await sha256Hex(canonicalJson([call.tool, call.args])), project: call.project };
}

/** JSON with every object's keys sorted, so the same arguments hash the same whichever order a client sent them in. */
function canonicalJson(value: unknown): string {
  return JSON.stringify(value, (_name, v: unknown) =>
    v !== null && typeof v === "object" && !Array.isArray(v)
      ? Object.fromEntries(Object.entries(v).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)))
      : v,
  );
}

/** The keys' calls stored within the window (an expired row no longer counts; the write replaces it). */
async function storedCalls(scope: TenantScope, keys: readonly string[], now: number): Promise<Map<string, StoredCall>> {
  const { results } = await scope.d1
    .prepare(
      `SELECT key, request_hash, response FROM idempotency_keys WHERE tenant_id = ? AND key ${IN_JSON} AND created_at > ?`,
    )
    .bind(scope.tenantId, JSON.stringify(keys), now - IDEMPOTENCY_WINDOW_MS)
    .all<{ key: string; request_hash: string; response: string }>();
  return new Map(results.map((r) => [r.key, { hash: r.request_hash, response: r.response }]));
}

function replay<T>(call: HashedCall, stored: StoredCall): T {
  if (stored.hash !== call.hash) throw keyConflict(call.key);
  return (JSON.parse(stored.response) as { result: T }).result;
}

function keyConflict(key: string): AppError {
  return new AppError(
    "CONFLICT",
    `idempotency_key '${key}' was used in the last 24 hours for a different call (another tool or other arguments); ` +
      "send a new key for a new call",
    { parameter: "idempotency_key", idempotency_key: key },
  );
}

/**
 * The keys' rows, for the write's batch: an expired row of the same key goes first (a key past its window is free
 * again), then the new rows. A live row of the key (a concurrent call's) makes the insert, and so the batch, fail.
 */
function keyStatements<T>(
  scope: TenantScope,
  entries: readonly { call: HashedCall; result: T }[],
  now: number,
): D1PreparedStatement[] {
  if (entries.length === 0) return [];
  const rows = entries.map(({ call, result }) => [
    call.key,
    call.hash,
    JSON.stringify({ project: call.project, result }),
  ]);
  return [
    scope.d1
      .prepare(`DELETE FROM idempotency_keys WHERE tenant_id = ? AND key ${IN_JSON} AND created_at <= ?`)
      .bind(scope.tenantId, JSON.stringify(rows.map((r) => r[0])), now - IDEMPOTENCY_WINDOW_MS),
    scope.d1
      .prepare(
        `INSERT INTO idempotency_keys (tenant_id, key, request_hash, response, created_at)
         SELECT ?1, json_extract(value, '$[0]'), json_extract(value, '$[1]'), json_extract(value, '$[2]'), ?2
         FROM json_each(?3)`,
      )
      .bind(scope.tenantId, now, JSON.stringify(rows)),
  ];
}

/** Whether a batch failed because a key it inserts is already stored. */
function isKeyTaken(error: unknown): boolean {
  return /UNIQUE constraint failed: idempotency_keys\./.test(String(error));
}
