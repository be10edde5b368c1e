import type { TenantScope } from "../../db/scope";
import { type SearchFilters, type SearchRow, searchedProjects } from "../search/search-rows";
import { type BlockPlan, exactScores, rankBlocks } from "./block-rank";
import {
  addEntries,
  type BlocksRead,
  type BlocksRow,
  type BlockTerm,
  blocksStatement,
  moreBlocksStatement,
  parseBlocksRead,
} from "./block-read";
import { timedWalkedRows, timedWalkStatement, walkedRows, walkStatement } from "./block-walk";
import { decodeEntries } from "./blocks";
import type { KeywordRow, TimedRow } from "./lists";

/**
 * The keyword lists from posting blocks (blocks.ts): the words' blocks in one trip (block-read.ts), ranked and
 * certified in the worker (block-rank.ts), then the winners walked through the filters in a second (block-walk.ts).
 * A third trip reads the words' remaining blocks where the bound requires it. Null where the blocks cannot serve the
 * search, or where the certificate fails (the filters took too many of the chunks read): the caller then reads every
 * posting (lists.ts), which is always exact.
 */

/** The first trip; null where the tenant has chunks the blocks cannot serve. */
async function readBlocks(scope: TenantScope, terms: BlockTerm[], blocksRead?: number): Promise<BlocksRead | null> {
  const { results } = await blocksStatement(scope, terms, blocksRead).all<BlocksRow>();
  const read = parseBlocksRead(results, terms);
  return read.unserved ? null : read;
}

/**
 * The words' remaining full blocks, added to the read; false where a word was built anew since the first trip (its
 * blocks no longer follow on from those read).
 */
async function readRemaining(
  scope: TenantScope,
  read: BlocksRead,
  words: { term: string; from: number }[],
): Promise<boolean> {
  const { results } = await moreBlocksStatement(scope, words).all<{
    i: number;
    block: number;
    through: number;
    entries: string | null;
  }>();
  for (const row of results) {
    const word = read.words.get(words[row.i]!.term)!;
    if (row.block === 0 && row.through !== word.built) return false;
    if (row.entries !== null) addEntries(word, decodeEntries(row.entries), read.changed);
  }
  for (const { term } of words) Object.assign(read.words.get(term)!, { next: null, bound: 0 });
  return true;
}

/** Every word's blocks read in full, so that the plans are exact; null where that failed. */
async function complete(scope: TenantScope, read: BlocksRead): Promise<BlocksRead | null> {
  const words = [...read.words].flatMap(([term, w]) => (w.next === null ? [] : [{ term, from: w.next }]));
  return words.length === 0 || (await readRemaining(scope, read, words)) ? read : null;
}

/**
 * A keyword list whose walk is still to run: the chunks it may give (`expected`, best first: where every word was read
 * in full, the first `pool` of its order, which it gives unless the filters leave one out; else every chunk that may
 * reach the pool, by the parts known, whose rows the walk reads), so the caller can run the walk beside reads that
 * depend on them, and read the walk's answer with `finish`.
 */
export interface PendingList {
  walk: D1PreparedStatement;
  /** What the walk is given: the ids in order, and how many rows it stops at (the caller may run it in a statement of its own). */
  given: { order: number[]; limit: number };
  expected: number[];
  /** The list from the walk's answer; null where the walk ran out of the chunks it was given (read every posting). */
  finish(result: D1Result<SearchRow & { rank: number }>): KeywordRow[] | null;
}

/**
 * Chunk ids a walk is given at most (their JSON under D1's 2 MB a value): a walk that runs out of them before the pool
 * is full leaves the search to read every posting.
 */
const WALK_IDS = 60_000;

/**
 * The keyword list of a query's words (`terms`, blockTerms) through the filters, from its first trip: the list, or
 * its walk still to run (where every word was read in full); null: read every posting instead. `blocksRead`: full
 * blocks the first trip reads (BLOCKS_READ; tests read fewer).
 */
export async function planBlockList(
  scope: TenantScope,
  terms: BlockTerm[],
  filters: SearchFilters,
  pool: number,
  blocksRead?: number,
): Promise<KeywordRow[] | PendingList | null> {
  const read = await readBlocks(scope, terms, blocksRead);
  if (!read) return null;
  const projects = searchedProjects(scope, filters);
  let plan: BlockPlan = rankBlocks(read, terms, projects, pool);
  if (plan.kind === "more") {
    if (!(await readRemaining(scope, read, plan.words))) return null;
    plan = rankBlocks(read, terms, projects, pool);
  }
  if (plan.kind === "more") return null;
  if (plan.kind === "exact") {
    if (plan.order.length === 0) return [];
    const { scores, info, order } = plan;
    const given = order.slice(0, WALK_IDS);
    return {
      walk: walkStatement(scope, given, filters, pool),
      given: { order: given, limit: pool },
      expected: order.slice(0, pool),
      finish: (result) =>
        result.results.length < pool && given.length < order.length ? null : walkedRows(result.results, scores, info),
    };
  }
  // Every chunk that may reach the pool is read, and scored from its forward index where a word's part is unknown; the
  // hits expected are the best by the parts known.
  if (plan.order.length > WALK_IDS) return null;
  const bounded = plan;
  const known = (doc: number) => bounded.scores.get(doc) ?? 0;
  return {
    walk: walkStatement(scope, plan.order, filters, plan.order.length),
    given: { order: plan.order, limit: plan.order.length },
    expected: [...plan.order].sort((a, b) => known(b) - known(a) || a - b),
    finish: (result) => {
      const exact = exactScores(bounded, result.results, read.avgdl, pool);
      return exact ? walkedRows(result.results, exact, bounded.info).slice(0, pool) : null;
    },
  };
}

/** The keyword list from posting blocks, its walk run at once; null: read every posting instead. */
export async function blockList(
  scope: TenantScope,
  terms: BlockTerm[],
  filters: SearchFilters,
  pool: number,
  blocksRead?: number,
): Promise<KeywordRow[] | null> {
  const planned = await planBlockList(scope, terms, filters, pool, blocksRead);
  if (planned === null || Array.isArray(planned)) return planned;
  return planned.finish(await planned.walk.all());
}

/**
 * The lists of a query that names a time (lists.ts, timedKeywordStatement): `terms` the words without the time words,
 * `plain` the whole query's (null when they are the same). Every word is read in full: the list of what was written
 * then walks every chunk found until enough pass.
 */
export async function blockTimedRows(
  scope: TenantScope,
  lists: { terms: BlockTerm[]; plain: BlockTerm[] | null },
  filters: SearchFilters,
  during: SearchFilters,
  pool: number,
): Promise<TimedRow[] | null> {
  const first = await readBlocks(scope, [...lists.terms, ...(lists.plain ?? [])]);
  const read = first && (await complete(scope, first));
  if (!read) return null;
  const projects = searchedProjects(scope, filters);
  const terms = rankBlocks(read, lists.terms, projects, pool);
  const plain = lists.plain ? rankBlocks(read, lists.plain, projects, pool) : null;
  if (terms.kind !== "exact" || (plain && plain.kind !== "exact")) return null;
  // Its walk through the time may go through every chunk found: it is given them all, or reads every posting instead.
  if (terms.order.length > WALK_IDS || (plain?.kind === "exact" && plain.order.length > WALK_IDS)) return null;
  const { results } = await timedWalkStatement(
    scope,
    { terms: terms.order, plain: plain?.order ?? null },
    filters,
    during,
    pool,
  ).all<SearchRow & { list: TimedRow["list"]; rank: number; in_then: number }>();
  return timedWalkedRows(
    results,
    { terms: terms.scores, plain: plain?.scores ?? null },
    { terms: terms.info, plain: plain?.info ?? null },
  );
}
