/**
 * A statement's rows as objects, built here from the columns and rows D1 sends: the binding's own `all()` builds each
 * row with Object.fromEntries over [column, value] pairs, much slower, and that work sits inside the D1 wait of every
 * search. For statements that answer many wide rows.
 */
export async function allRows<T>(statement: D1PreparedStatement): Promise<T[]> {
  const [columns, ...rows] = await statement.raw<unknown[]>({ columnNames: true });
  if (!columns) return [];
  return rows.map((values) => {
    const row: Record<string, unknown> = {};
    for (let i = 0; i < columns.length; i++) row[columns[i]!] = values[i];
    return row as T;
  });
}
