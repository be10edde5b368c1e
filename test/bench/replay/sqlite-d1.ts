import type { DatabaseSync } from "node:sqlite";

/** One statement as run: its SQL and the milliseconds SQLite took to prepare and run it. */
export interface Timed {
  sql: string;
  ms: number;
}

/**
 * A D1 binding over Node's SQLite, for measuring (replay.ts), never for serving: every statement is prepared anew
 * (workerd, under a local D1, keeps compiled statements by text, so a server pays less) and timed into `log`. What
 * D1 adds around SQLite (its transport, a Sessions API session, its limits) is not here, so figures compare with each
 * other, not with a server's.
 */
export function sqliteD1(db: DatabaseSync, log: Timed[]): D1Database {
  const run = (sql: string, args: unknown[]) => {
    const started = performance.now();
    const rows = db
      .prepare(sql)
      .all(...(args.map((v) => (v === undefined ? null : typeof v === "boolean" ? Number(v) : v)) as never[]));
    log.push({ sql, ms: performance.now() - started });
    return rows as Record<string, unknown>[];
  };
  const statement = (sql: string, args: unknown[] = []): D1PreparedStatement =>
    ({
      bind: (...values: unknown[]) => statement(sql, values),
      all: async () => ({ results: run(sql, args), success: true, meta: {} }),
      first: async (column?: string) => {
        const row = run(sql, args)[0] ?? null;
        return row && column ? row[column] : row;
      },
      raw: async (options?: { columnNames?: boolean }) => {
        const rows = run(sql, args).map((row) => Object.values(row));
        return options?.columnNames
          ? [
              db
                .prepare(sql)
                .columns()
                .map((c) => c.name),
              ...rows,
            ]
          : rows;
      },
      run: async () => ({ results: run(sql, args), success: true, meta: {} }),
    }) as unknown as D1PreparedStatement;
  return {
    prepare: (sql: string) => statement(sql),
    batch: async (statements: D1PreparedStatement[]) => Promise.all(statements.map((s) => s.all())),
  } as unknown as D1Database;
}
