import { allInOneTrip } from "../../db/one-trip";
import type { TenantScope } from "../../db/scope";
import type { PendingList } from "../keyword-index/block-search";
import type { KeywordRow } from "../keyword-index/lists";
import { type Expansion, type ExpansionRead, type ExpansionRequest, expansionRead } from "./expansion";
import type { FeedbackChunk } from "./feedback-scores";
import type { SearchFilters, SearchRow } from "./search-rows";
import { vectorRowsStatement } from "./search-vectors";

/**
 * Search's second round trip (search.ts): the vector hits' rows and what the first hits point to (expansion.ts). Where
 * the keyword list's walk is still to run (posting blocks: keyword-index/block-search.ts), the trip is made ahead, with
 * the walk, for the hits the walk is expected to give: the walk runs inside the expansion's statement, whose sources
 * its rows are (they would otherwise be read twice), and the counts of every word of the best of them are read (their
 * text, which feedback needs, is not read yet). Once the walk's rows are in, the search asks for
 * what it needs; the trip made ahead serves it where it holds it (the walk gave the hits expected, and every feedback
 * word was counted), else the trip is made again for what is needed: a third trip, where filters left out a chunk
 * expected among the hits, or a derived memory folds in text of other hits.
 */

/** What a second trip reads: the rows of vector hits the keyword list did not give, and the expansion. */
export interface TripRequest {
  unread: number[];
  expansion: ExpansionRequest | null;
}

export interface Trip {
  vectorRows: Map<number, SearchRow>;
  /** The expansion read, given the first hits' rows (and the best hits' text where it was read ahead); null: none. */
  expansion:
    | ((
        candidates: Iterable<FeedbackChunk & { chunk_id: number }>,
        feedbackFrom: { content: string; score: number }[],
      ) => Expansion | null)
    | null;
}

/** The statements of a trip, and how to read their answers. */
function tripStatements(
  scope: TenantScope,
  request: TripRequest,
  filters: SearchFilters,
  held?: Map<number, SearchRow>,
) {
  const unread = request.unread.length === 0 ? null : vectorRowsStatement(scope, request.unread, filters);
  const around: ExpansionRead | null = request.expansion ? expansionRead(scope, request.expansion) : null;
  const statements = [unread, around?.statement].filter((s): s is D1PreparedStatement => !!s);
  const read = (results: D1Result<unknown>[]): Trip => {
    const vectorRows = new Map((unread ? (results[0]!.results as SearchRow[]) : []).map((row) => [row.chunk_id, row]));
    const last = results.at(-1)!;
    return {
      vectorRows,
      expansion: around ? (candidates, feedbackFrom) => around.read(last, candidates, feedbackFrom, held) : null,
    };
  };
  return { statements, read, around };
}

/** The second trip, made now. */
export async function secondTrip(scope: TenantScope, request: TripRequest, filters: SearchFilters): Promise<Trip> {
  const { statements, read } = tripStatements(scope, request, filters);
  return read(await allInOneTrip<unknown>(scope.d1, statements));
}

/**
 * A trip made ahead with a keyword list's walk: the list (null: read it in full instead), and the trip with what it was
 * asked; its vector rows hold those of vector hits the walk gave but the list did not keep, and its expansion the rows
 * of chunks around named first hits that are not.
 */
export interface TripAhead {
  rows: KeywordRow[] | null;
  request: TripRequest;
  trip: Trip;
}

/**
 * The keyword list's walk, with the second trip for the hits it is expected to give, in one round trip: in the
 * expansion's statement where there is one, else beside it.
 */
export async function walkWithTrip(
  scope: TenantScope,
  pending: PendingList,
  request: TripRequest,
  filters: SearchFilters,
): Promise<TripAhead> {
  const held = new Map<number, SearchRow>();
  // The walk runs inside the expansion's statement, whose sources it places: those it is expected to give are its own.
  const expected = new Set(pending.expected);
  const inside: TripRequest | null = request.expansion && {
    ...request,
    expansion: {
      ...request.expansion,
      walk: pending.given,
      sources: request.expansion.sources.filter((s) => !expected.has(typeof s === "number" ? s : s.chunk_id)),
    },
  };
  const { statements, read, around } = tripStatements(scope, inside ?? request, filters, held);
  const results = inside
    ? await allInOneTrip<unknown>(scope.d1, statements)
    : await scope.d1.batch<unknown>([pending.walk, ...statements]);
  const walked = inside
    ? around!.walked(results.at(-1)!)
    : (results.shift()!.results as (SearchRow & { rank: number })[]);
  for (const row of walked) held.set(row.chunk_id, row);
  const trip = read(results);
  for (const [id, row] of trip.vectorRows) held.set(id, row);
  for (const id of pending.expected) {
    const row = held.get(id);
    if (row && !trip.vectorRows.has(id)) trip.vectorRows.set(id, row);
  }
  return { rows: pending.finish({ results: walked } as D1Result<SearchRow & { rank: number }>), request, trip };
}

/**
 * Whether a trip made ahead holds what `needed` asks: every vector row it needs (read beside, or given by the walk),
 * every first hit among its first hits and every source among its sources (extra ones are left out by
 * narrowExpansion, and the rows of chunks around them came with the walk), and the expansion's other settings alike.
 */
export function holds(ahead: TripRequest, needed: TripRequest): boolean {
  const firstHits = new Set(ahead.expansion?.firstHits ?? []);
  const unread = new Set(ahead.unread);
  if (!needed.unread.every((id) => unread.has(id) || firstHits.has(id))) return false;
  const a = ahead.expansion;
  const b = needed.expansion;
  if (!a || !b) return a === b;
  const sources = new Set(a.sources.map((s) => (typeof s === "number" ? s : s.chunk_id)));
  return (
    b.firstHits.every((id) => firstHits.has(id)) &&
    b.sources.every((s) => sources.has(typeof s === "number" ? s : s.chunk_id)) &&
    a.query === b.query &&
    a.neighbours === b.neighbours &&
    a.links === b.links &&
    a.similarLinkWeight === b.similarLinkWeight &&
    (a.feedbackChunks !== undefined || b.feedbackFrom.length === 0)
  );
}
