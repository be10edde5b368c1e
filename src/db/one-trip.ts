/**
 * The statements' results in one round trip to D1: a statement on its own, several in one batch (a
 * statement per group of ids keeps each bound list and answer small, the batch keeps it one trip).
 */
export async function allInOneTrip<T>(d1: D1Database, statements: D1PreparedStatement[]): Promise<D1Result<T>[]> {
  if (statements.length <= 1) return statements.length === 0 ? [] : [await statements[0]!.all<T>()];
  return d1.batch<T>(statements);
}
