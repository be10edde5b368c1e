import type { BillableUnits, UnitMeter } from "../billable-units";

/**
 * Which units a binding's rows count as: D1's own (billed), or a local stand-in's kept in D1 (the vector index
 * in place of Vectorize), which production does not bill.
 */
export type RowKind = "d1" | "local";

const METERED = Symbol("metered D1");
interface Metering {
  raw: D1Database;
  meter: UnitMeter;
  kind: RowKind;
}
type MeteredDatabase = D1Database & { [METERED]: Metering };

/**
 * A D1 binding that charges each statement to the meter's current call or job: one round trip for a statement
 * run alone or for one `batch()` of any size, the time waited, and D1's own `meta.rows_read` and
 * `meta.rows_written`. `first()` and `raw()` answer no meta, so they run as `all()` here and are cut to their
 * answer's shape (the binding's `first()` builds every row as `all()` does anyway). A session opened on it
 * (`withSession`) charges the same meter. Metering a handle that is metered already charges the new meter instead
 * (a shard metered for a whole request, then for one tenant's services), never both.
 */
export function meteredD1(inner: D1Database, meter: UnitMeter, kind: RowKind = "d1"): D1Database {
  const metering = (inner as Partial<MeteredDatabase>)[METERED];
  if (metering?.meter === meter && metering.kind === kind) return inner;
  const raw = metering?.raw ?? inner;
  const metered: MeteredDatabase = {
    [METERED]: { raw, meter, kind },
    prepare: (query) => meteredStatement(raw.prepare(query), meter, kind),
    batch: (statements) => meteredBatch(raw, meter, kind, statements),
    exec: (query) => trip(meter, kind, () => raw.exec(query)),
    withSession: (constraint) => meteredSession(raw.withSession(constraint), meter, kind),
    dump: () => raw.dump(),
  };
  return metered;
}

/** The binding under any metering: for a wrapper that meters it once itself (a tenant's session and services). */
export function unmetered(d1: D1Database): D1Database {
  return (d1 as Partial<MeteredDatabase>)[METERED]?.raw ?? d1;
}

/** The meter a metered handle charges (a scheduled pass's, a request's), or null for a handle nothing meters. */
export function meterOf(d1: D1Database): UnitMeter | null {
  return (d1 as Partial<MeteredDatabase>)[METERED]?.meter ?? null;
}

function meteredSession(session: D1DatabaseSession, meter: UnitMeter, kind: RowKind): D1DatabaseSession {
  return {
    prepare: (query) => meteredStatement(session.prepare(query), meter, kind),
    batch: (statements) => meteredBatch(session, meter, kind, statements),
    getBookmark: () => session.getBookmark(),
  };
}

function meteredBatch<T>(
  target: Pick<D1Database, "batch">,
  meter: UnitMeter,
  kind: RowKind,
  statements: D1PreparedStatement[],
): Promise<D1Result<T>[]> {
  return trip(meter, kind, async (units) => {
    const results = await target.batch<T>(statements.map(unwrap));
    for (const result of results) addRows(units, kind, result.meta);
    return results;
  });
}

const INNER = Symbol("inner statement");
type Metered = D1PreparedStatement & { [INNER]: D1PreparedStatement };

async function trip<T>(meter: UnitMeter, kind: RowKind, run: (units: BillableUnits) => Promise<T>): Promise<T> {
  const units = meter.current;
  if (kind === "d1") units.d1RoundTrips++;
  const started = Date.now();
  try {
    return await meter.track(run(units));
  } finally {
    if (kind === "d1") units.d1Ms += Date.now() - started;
  }
}

function addRows(units: BillableUnits, kind: RowKind, meta: Partial<D1Meta> | undefined): void {
  const read = meta?.rows_read ?? 0;
  const written = meta?.rows_written ?? 0;
  if (kind === "d1") {
    units.d1RowsRead += read;
    units.d1RowsWritten += written;
  } else {
    units.localRowsRead += read;
    units.localRowsWritten += written;
  }
}

function meteredStatement(inner: D1PreparedStatement, meter: UnitMeter, kind: RowKind): D1PreparedStatement {
  const all = <T>() =>
    trip(meter, kind, async (units) => {
      const result = await inner.all<T>();
      addRows(units, kind, result.meta);
      return result;
    });
  const statement = {
    [INNER]: inner,
    bind: (...values: unknown[]) => meteredStatement(inner.bind(...values), meter, kind),
    run: <T>() =>
      trip(meter, kind, async (units) => {
        const result = await inner.run<T>();
        addRows(units, kind, result.meta);
        return result;
      }),
    all,
    first: async (column?: string) => {
      const row = (await all<Record<string, unknown>>()).results[0];
      if (row === undefined || column === undefined) return row ?? null;
      if (!(column in row)) throw new Error(`D1_COLUMN_NOTFOUND: Column not found (${column})`);
      return row[column];
    },
    raw: async (options?: { columnNames?: boolean }) => {
      const rows = (await all<Record<string, unknown>>()).results;
      const values = rows.map((row) => Object.values(row));
      return options?.columnNames && rows.length > 0 ? [Object.keys(rows[0]!), ...values] : values;
    },
  };
  return statement as unknown as Metered;
}

/** The real statement behind a metered one: D1's batch() accepts only its own. */
function unwrap(statement: D1PreparedStatement): D1PreparedStatement {
  return (statement as Partial<Metered>)[INNER] ?? statement;
}
