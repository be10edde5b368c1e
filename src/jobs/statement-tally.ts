/** What one statement of a scheduled pass cost over its runs: D1's own rows read and written. */
export interface StatementCost {
  runs: number;
  read: number;
  written: number;
}

/** Statements by their SQL (whitespace folded), as a pass ran them. */
export type StatementTally = Map<string, StatementCost>;

/**
 * A D1 binding that adds each statement's `meta.rows_read` and `meta.rows_written` to `tally` under its SQL, so a pass
 * can say which of its statements its rows went to (pass-usage.ts logs them once an hour). Batched statements are
 * told apart by the batch's per-statement meta. Wrap the raw binding, then meter on top of it: each wrapper unwraps
 * only its own statements.
 */
export function talliedD1(inner: D1Database, tally: StatementTally): D1Database {
  return {
    prepare: (query) => talliedStatement(inner.prepare(query), query, tally),
    batch: async <T>(statements: D1PreparedStatement[]) => {
      const results = await inner.batch<T>(statements.map(unwrap));
      results.forEach((result, i) => add(tally, sqlOf(statements[i]!), result.meta));
      return results;
    },
    exec: (query) => inner.exec(query),
    withSession: (constraint) => inner.withSession(constraint),
    dump: () => inner.dump(),
  };
}

const INNER = Symbol("tallied statement");
type Tallied = D1PreparedStatement & { [INNER]: D1PreparedStatement; sql: string };

function talliedStatement(inner: D1PreparedStatement, sql: string, tally: StatementTally): D1PreparedStatement {
  const all = async <T>() => {
    const result = await inner.all<T>();
    add(tally, sql, result.meta);
    return result;
  };
  const statement = {
    [INNER]: inner,
    sql,
    bind: (...values: unknown[]) => talliedStatement(inner.bind(...values), sql, tally),
    run: async <T>() => {
      const result = await inner.run<T>();
      add(tally, sql, result.meta);
      return result;
    },
    all,
    // first() and raw() answer no meta: run as all() and cut to their shape, as the metered binding does.
    first: async (column?: string) => {
      const row = (await all<Record<string, unknown>>()).results[0];
      if (row === undefined || column === undefined) return row ?? null;
      return row[column];
    },
    raw: async (options?: { columnNames?: boolean }) => {
      const rows = (await all<Record<string, unknown>>()).results;
      const values = rows.map((row) => Object.values(row));
      return options?.columnNames && rows.length > 0 ? [Object.keys(rows[0]!), ...values] : values;
    },
  };
  return statement as unknown as Tallied;
}

function unwrap(statement: D1PreparedStatement): D1PreparedStatement {
  return (statement as Partial<Tallied>)[INNER] ?? statement;
}

function sqlOf(statement: D1PreparedStatement): string {
  return (statement as Partial<Tallied>).sql ?? "(a statement prepared outside the pass)";
}

function add(tally: StatementTally, sql: string, meta: Partial<D1Meta> | undefined): void {
  const key = sql.replace(/\s+/g, " ").trim();
  const cost = tally.get(key) ?? { runs: 0, read: 0, written: 0 };
  cost.runs++;
  cost.read += meta?.rows_read ?? 0;
  cost.written += meta?.rows_written ?? 0;
  tally.set(key, cost);
}

/** Adds one tally into another. */
export function addTally(into: StatementTally, from: StatementTally): void {
  for (const [sql, cost] of from) {
    const sum = into.get(sql) ?? { runs: 0, read: 0, written: 0 };
    sum.runs += cost.runs;
    sum.read += cost.read;
    sum.written += cost.written;
    into.set(sql, sum);
  }
}
