import { fitsUtf8, PLATFORM_LIMITS } from "../adapters/platform-limits";
import { spendQueries } from "./invocation-queries";

/**
 * A D1 binding that refuses a statement D1 would refuse, with D1's own messages and at the same moment (when
 * it runs, as a rejected promise): more than 100 bound parameters, SQL over 100,000 bytes, a string or BLOB
 * value over 2,000,000 bytes; a query past the invocation's budget (invocation-queries.ts). Local D1 (SQLite in miniflare) accepts all of these, so without this a statement
 * that works in every test fails on its first production call. Applied at the Worker's entry (src/checked-env.ts).
 */
export function checkedD1(inner: D1Database): D1Database {
  let checked = wrapped.get(inner);
  if (!checked) {
    checked = {
      prepare: (sql: string) => statement(inner.prepare(sql), sqlError(sql)),
      batch: (statements: D1PreparedStatement[]) => runBatch(statements, (real) => inner.batch(real)),
      exec: (sql: string) => refuseOr(sqlError(sql), () => inner.exec(sql)),
      withSession: (constraint?: string) => session(inner.withSession(constraint as D1SessionConstraint)),
      dump: () => inner.dump(),
    } as unknown as D1Database;
    wrapped.set(inner, checked);
  }
  return checked;
}

/** One checked wrapper per binding, so caches keyed by the binding (drizzle's) keep working. */
const wrapped = new WeakMap<D1Database, D1Database>();
const REAL = Symbol("the statement D1 made");
const REFUSED = Symbol("why D1 would refuse it");
type Checked = D1PreparedStatement & { [REAL]: D1PreparedStatement; [REFUSED]: Error | null };

const D1 = PLATFORM_LIMITS.d1;

function sqlError(sql: string): Error | null {
  return fitsUtf8(sql, D1.statementBytes) ? null : new Error(`D1_ERROR: statement too long (over ${D1.statementBytes} bytes): SQLITE_TOOBIG`);
}

function valuesError(values: unknown[]): Error | null {
  if (values.length > D1.boundParameters) return new Error(`D1_ERROR: too many SQL variables (${values.length}; D1 allows ${D1.boundParameters}): SQLITE_ERROR`);
  for (const value of values) {
    const big = typeof value === "string" ? !fitsUtf8(value, D1.valueBytes) : value instanceof ArrayBuffer || ArrayBuffer.isView(value) ? value.byteLength > D1.valueBytes : false;
    if (big) return new Error(`D1_ERROR: string or blob too big (over ${D1.valueBytes} bytes): SQLITE_TOOBIG`);
  }
  return null;
}

const refuseOr = <T>(error: Error | null, run: () => Promise<T>, queries = 1): Promise<T> => {
  const refused = error ?? spendQueries(queries);
  return refused ? Promise.reject(refused) : run();
};

function statement(inner: D1PreparedStatement, refused: Error | null): D1PreparedStatement {
  const checked = {
    [REAL]: inner,
    [REFUSED]: refused,
    // An oversized value is not handed to D1 at all: the statement is refused when it runs.
    bind: (...values: unknown[]) => {
      const error = refused ?? valuesError(values);
      return statement(error ? inner : inner.bind(...values), error);
    },
    first: (column?: string) => refuseOr(refused, () => (column === undefined ? inner.first() : inner.first(column))),
    run: () => refuseOr(refused, () => inner.run()),
    all: () => refuseOr(refused, () => inner.all()),
    raw: (options?: { columnNames?: boolean }) => refuseOr(refused, () => inner.raw(options as { columnNames?: false })),
  };
  return checked as unknown as Checked;
}

/** A batch runs all or nothing, so one refused statement refuses it whole. */
function runBatch<T>(statements: D1PreparedStatement[], run: (real: D1PreparedStatement[]) => Promise<T>): Promise<T> {
  const refused = statements.map((s) => (s as Partial<Checked>)[REFUSED]).find(Boolean) ?? null;
  return refuseOr(refused, () => run(statements.map(real)), statements.length);
}

function session(inner: D1DatabaseSession): D1DatabaseSession {
  return {
    prepare: (sql: string) => statement(inner.prepare(sql), sqlError(sql)),
    batch: <T>(statements: D1PreparedStatement[]) => runBatch(statements, (real) => inner.batch<T>(real)),
    getBookmark: () => inner.getBookmark(),
  } as D1DatabaseSession;
}

/** The statement D1 made behind a checked one: its batch() accepts only its own. */
export function real(s: D1PreparedStatement): D1PreparedStatement {
  return (s as Partial<Checked>)[REAL] ?? s;
}
