/**
 * A D1 session (the Sessions API: reads may be served by a read replica that is at least as new as the
 * session's bookmark) in the shape of the D1Database that domain code and drizzle take. A session has no
 * exec() or dump(), which no request path uses.
 */
export function sessionDatabase(session: D1DatabaseSession): D1Database {
  const database = {
    prepare: (query: string) => session.prepare(query),
    batch: <T>(statements: D1PreparedStatement[]) => session.batch<T>(statements),
    exec: () => Promise.reject(new Error("exec() is not available in a D1 session")),
    withSession: () => session,
    dump: () => Promise.reject(new Error("dump() is not available in a D1 session")),
  };
  return database as unknown as D1Database;
}
