/** Round trips to D1 so far (a statement run on its own, or one `batch()` of any size) and the time spent waiting on them. */
export interface RoundTripCounter {
  count: number;
  /** Summed wait, so overlapping trips count twice. */
  ms: number;
}

/**
 * A D1 binding that counts its round trips, so the usage log can say how many queries each tool
 * call waited on (D1 sits in one region; each trip from the edge costs network time).
 */
export function countedD1(inner: D1Database, counter: RoundTripCounter): D1Database {
  const counted: D1Database = {
    prepare: (query) => countedStatement(inner.prepare(query), counter),
    batch: (statements) => trip(counter, () => inner.batch(statements.map(unwrap))),
    exec: (query) => trip(counter, () => inner.exec(query)),
    withSession: (constraint) => inner.withSession(constraint),
    dump: () => inner.dump(),
  };
  return counted;
}

const INNER = Symbol("inner statement");
type Counted = D1PreparedStatement & { [INNER]: D1PreparedStatement };

async function trip<T>(counter: RoundTripCounter, run: () => Promise<T>): Promise<T> {
  counter.count++;
  const started = Date.now();
  try {
    return await run();
  } finally {
    counter.ms += Date.now() - started;
  }
}

function countedStatement(inner: D1PreparedStatement, counter: RoundTripCounter): D1PreparedStatement {
  const statement = {
    [INNER]: inner,
    bind: (...values: unknown[]) => countedStatement(inner.bind(...values), counter),
    first: (column?: string) => trip(counter, () => (column === undefined ? inner.first() : inner.first(column))),
    run: () => trip(counter, () => inner.run()),
    all: () => trip(counter, () => inner.all()),
    raw: (options?: { columnNames?: boolean }) => trip(counter, () => inner.raw(options as { columnNames?: false })),
  };
  return statement as unknown as Counted;
}

/** The real statement behind a counted one: D1's batch() accepts only its own. */
function unwrap(statement: D1PreparedStatement): D1PreparedStatement {
  return (statement as Partial<Counted>)[INNER] ?? statement;
}
