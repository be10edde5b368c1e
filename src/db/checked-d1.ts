import { fitsUtf8, PLATFORM_LIMITS } from "../platform-limits";
import { spendQueries } from "./invocation-queries";
import { scanSql } from "./sql-scan";

/**
 * A D1 binding that refuses a statement D1 would refuse, with D1's own messages and at the same moment (when
 * it runs, as a rejected promise): more than 100 bound parameters, SQL over 100,000 bytes, a string or BLOB
 * value over 2,000,000 bytes, a function call with more than 32 arguments (sql-scan.ts); a query past the
 * invocation's budget (invocation-queries.ts); and a query or batch that runs longer than 30 s is answered with
 * D1's timeout error (the local query is not stopped; its answer is dropped). Local D1 (SQLite in miniflare)
 * accepts all of these (a LIKE or GLOB pattern over 50 bytes it refuses itself, as D1 does),
 * so without this a statement that works in every test fails on its first production call. Applied at the
 * Worker's entry (src/checked-env.ts). `limits` lowers the duration limit for tests.
 */
export function checkedD1(inner: D1Database, limits: { queryMs?: number } = {}): D1Database {
  let checked = wrapped.get(inner);
  if (!checked) {
    const run = runner(limits.queryMs ?? D1.queryMs);
    checked = {
      prepare: (sql: string) => statement(inner.prepare(sql), sqlError(sql), run),
      batch: (statements: D1PreparedStatement[]) => runBatch(statements, (real) => inner.batch(real), run),
      exec: (sql: string) => run(sqlError(sql), () => inner.exec(sql)),
      withSession: (constraint?: string) => session(inner.withSession(constraint as D1SessionConstraint), run),
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
type Run = <T>(error: Error | null, query: () => Promise<T>, queries?: number) => Promise<T>;

const D1 = PLATFORM_LIMITS.d1;

function sqlError(sql: string): Error | null {
  if (!fitsUtf8(sql, D1.statementBytes))
    return new Error(`D1_ERROR: statement too long (over ${D1.statementBytes} bytes): SQLITE_TOOBIG`);
  const call = scanSql(sql).widestCall;
  if (call && call.args > D1.functionArguments)
    return new Error(`D1_ERROR: too many arguments on function ${call.name}: SQLITE_ERROR`);
  return null;
}

function valuesError(values: unknown[]): Error | null {
  if (values.length > D1.boundParameters)
    return new Error(
      `D1_ERROR: too many SQL variables (${values.length}; D1 allows ${D1.boundParameters}): SQLITE_ERROR`,
    );
  for (const value of values) {
    const big =
      typeof value === "string"
        ? !fitsUtf8(value, D1.valueBytes)
        : value instanceof ArrayBuffer || ArrayBuffer.isView(value)
          ? value.byteLength > D1.valueBytes
          : false;
    if (big) return new Error(`D1_ERROR: string or blob too big (over ${D1.valueBytes} bytes): SQLITE_TOOBIG`);
  }
  return null;
}

/**
 * Runs a query or batch unless it is refused (or past the invocation's budget), and answers D1's timeout error
 * if it took longer than `queryMs`: D1 resets the database after 30 s of one storage operation and rejects what
 * was pending with this message (a transient error: src/errors.ts makes it a retryable UNAVAILABLE). Checked when
 * the local query returns rather than with a timer per query, which every trip would pay for, and a local query
 * does not hang, it is only slow.
 */
function runner(queryMs: number): Run {
  return <T>(error: Error | null, query: () => Promise<T>, queries = 1): Promise<T> => {
    const refused = error ?? spendQueries(queries);
    if (refused) return Promise.reject(refused);
    const started = Date.now();
    return query().then((value) => {
      if (Date.now() - started > queryMs)
        throw new Error("D1_ERROR: D1 DB storage operation exceeded timeout which caused object to be reset.");
      return value;
    });
  };
}

function statement(inner: D1PreparedStatement, refused: Error | null, run: Run): D1PreparedStatement {
  const checked = {
    [REAL]: inner,
    [REFUSED]: refused,
    // An oversized value is not handed to D1 at all: the statement is refused when it runs.
    bind: (...values: unknown[]) => {
      const error = refused ?? valuesError(values);
      return statement(error ? inner : inner.bind(...values), error, run);
    },
    first: (column?: string) => run(refused, () => (column === undefined ? inner.first() : inner.first(column))),
    run: () => run(refused, () => inner.run()),
    all: () => run(refused, () => inner.all()),
    raw: (options?: { columnNames?: boolean }) => run(refused, () => inner.raw(options as { columnNames?: false })),
  };
  return checked as unknown as Checked;
}

/** A batch runs all or nothing, so one refused statement refuses it whole; the 30 s are for the batch. */
function runBatch<T>(
  statements: D1PreparedStatement[],
  batch: (real: D1PreparedStatement[]) => Promise<T>,
  run: Run,
): Promise<T> {
  const refused = statements.map((s) => (s as Partial<Checked>)[REFUSED]).find(Boolean) ?? null;
  return run(refused, () => batch(statements.map(real)), statements.length);
}

function session(inner: D1DatabaseSession, run: Run): D1DatabaseSession {
  return {
    prepare: (sql: string) => statement(inner.prepare(sql), sqlError(sql), run),
    batch: <T>(statements: D1PreparedStatement[]) => runBatch(statements, (real) => inner.batch<T>(real), run),
    getBookmark: () => inner.getBookmark(),
  } as D1DatabaseSession;
}

/** The statement D1 made behind a checked one: its batch() accepts only its own. */
function real(s: D1PreparedStatement): D1PreparedStatement {
  return (s as Partial<Checked>)[REAL] ?? s;
}
