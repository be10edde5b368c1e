import type { BillableUnits, UnitMeter } from "../billable-units";

/**
 * Which units a binding's rows count as: D1's own (billed), or a local stand-in's kept in D1 (the vector index
 * in place of Vectorize), which production does not bill.
 */
export type RowKind = "d1" | "local";

/**
 * A D1 binding that charges each statement to the meter's current call or job: one round trip for a statement
 * run alone or for one `batch()` of any size, the time waited, and D1's own `meta.rows_read` and
 * `meta.rows_written`. `first()` and `raw()` answer no meta, so they run as `all()` here and are cut to their
 * answer's shape (the binding's `first()` builds every row as `all()` does anyway).
 */
export function meteredD1(inner: D1Database, meter: UnitMeter, kind: RowKind = "d1"): D1Database {
  const metered: D1Database = {
    prepare: (query) => meteredStatement(inner.prepare(query), meter, kind),
    batch: <T>(statements: D1PreparedStatement[]) =>
      trip(meter, kind, async (units) => {
        const results = await inner.batch<T>(statements.map(unwrap));
        for (const result of results) addRows(units, kind, result.meta);
        return results;
      }),
    exec: (query) => trip(meter, kind, () => inner.exec(query)),
    withSession: (constraint) => inner.withSession(constraint),
    dump: () => inner.dump(),
  };
  return metered;
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
