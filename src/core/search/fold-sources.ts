/**
 * A derived memory and the turns it came from say the same thing twice: ranked side by side they would take two of a
 * search's slots for one piece of evidence. So they share one result: the memory, carrying the source turns that
 * ranked (its `sources` names them all), at the better rank of the two. The slots this frees go to the next hits,
 * which would otherwise have been left out.
 *
 * A turn is folded only into a memory that itself ranks among the results: the walk fills `limit` results best
 * first, and a turn joins a memory met before the results are full (above it, or below it while slots remain). A
 * turn cited by several memories joins the first of them; a memory never folds into another.
 */

export interface FoldableHit {
  itemId: string;
  /** A derived memory's source turns (item ids); null for any other item. */
  sources: readonly string[] | null;
}

export interface FoldedResult<T> {
  hit: T;
  /** Source turns of `hit` that ranked on their own, best first. */
  folded: T[];
}

/** Up to `limit` results from hits ranked best first; `describe` says what each hit is. */
export function foldSources<T>(
  ranked: readonly T[],
  limit: number,
  describe: (hit: T) => FoldableHit,
): FoldedResult<T>[] {
  const results: FoldedResult<T>[] = [];
  /** A placed memory's result, by the item id of each source turn it may still take in. */
  const memoryOfSource = new Map<string, FoldedResult<T>>();
  /** Turns placed as results of their own, by item id (a long turn may rank with more than one chunk). */
  const placedTurn = new Map<string, FoldedResult<T>[]>();
  for (const hit of ranked) {
    if (results.length >= limit) break;
    const { itemId, sources } = describe(hit);
    const holder = sources === null ? memoryOfSource.get(itemId) : undefined;
    if (holder) {
      holder.folded.push(hit);
      continue;
    }
    const result: FoldedResult<T> = { hit, folded: [] };
    if (sources === null) {
      placedTurn.set(itemId, [...(placedTurn.get(itemId) ?? []), result]);
      results.push(result);
      continue;
    }
    // The memory takes the place of the best of its source turns already placed; the others' places are freed.
    const above = new Set(sources.flatMap((id) => placedTurn.get(id) ?? []));
    if (above.size > 0) {
      for (const id of sources) placedTurn.delete(id);
      const at = results.findIndex((r) => above.has(r));
      result.folded.push(...results.filter((r) => above.has(r)).map((turn) => turn.hit));
      const kept = results.filter((r) => !above.has(r));
      kept.splice(at, 0, result);
      results.splice(0, results.length, ...kept);
    } else {
      results.push(result);
    }
    for (const id of sources) if (!memoryOfSource.has(id) && !placedTurn.has(id)) memoryOfSource.set(id, result);
  }
  return results;
}
