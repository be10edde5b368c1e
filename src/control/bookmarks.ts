import { sessionDatabase } from "../db/session-database";

/**
 * Read replicas through D1's Sessions API, with read-your-writes per tenant. A request's queries run in one
 * session on the tenant's shard, started at the newest bookmark known for that tenant on that shard: the one
 * this isolate kept from the tenant's last request, or one the client sent back in `x-d1-bookmark` (each
 * response carries it, as `<shard>:<bookmark>`), whichever is newer (bookmarks sort oldest to newest). With
 * neither, the session starts at the primary ("first-primary"), so a request never reads older data than
 * its tenant wrote through this isolate or told us about. A bookmark names a position in one database, so
 * it is kept per shard, and one for another shard (the tenant moved) is ignored.
 */
export const BOOKMARK_HEADER = "x-d1-bookmark";
const MAX_BOOKMARKS = 10_000;

const newest = new Map<string, string>();

export interface TenantSession {
  /** The session as a D1Database for the request's scope and services. */
  readonly database: D1Database;
  /** After the request: keeps the session's bookmark and returns the header value for the response. */
  finish(): string | null;
}

export function openTenantSession(
  shardDb: D1Database,
  shard: string,
  tenantId: string,
  presented: string | null,
): TenantSession {
  const key = `${shard}\u0000${tenantId}`;
  const start = later(newest.get(key) ?? null, bookmarkFor(shard, presented));
  const session = shardDb.withSession(start ?? "first-primary");
  return {
    database: sessionDatabase(session),
    finish() {
      const bookmark = session.getBookmark();
      if (!bookmark) return null;
      const kept = later(newest.get(key) ?? null, bookmark)!;
      newest.delete(key);
      newest.set(key, kept);
      if (newest.size > MAX_BOOKMARKS) newest.delete(newest.keys().next().value!);
      return `${shard}:${kept}`;
    },
  };
}

/** Drops the bookmarks of a tenant (it moved: its old shard's positions mean nothing on the new one). */
export function forgetBookmarks(tenantId: string): void {
  for (const key of newest.keys()) if (key.endsWith(`\u0000${tenantId}`)) newest.delete(key);
}

/** The bookmark in a presented header value when it names this shard. */
function bookmarkFor(shard: string, presented: string | null): string | null {
  if (!presented || presented.length > 200) return null;
  const at = presented.indexOf(":");
  if (at <= 0 || presented.slice(0, at) !== shard) return null;
  const bookmark = presented.slice(at + 1);
  return /^[A-Za-z0-9-]+$/.test(bookmark) ? bookmark : null;
}

function later(a: string | null, b: string | null): string | null {
  if (a === null) return b;
  if (b === null) return a;
  return a > b ? a : b;
}
