import { porterStem } from "../../shared/porter";
import { STOPWORDS } from "../../shared/stopwords";

/**
 * Two memories of one subject and kind whose words (stemmed, stop words left out) overlap this much, as a share of
 * all the words either has (Jaccard), say the same thing, unless a guard tells them apart (meaningGuard). Lexical on
 * purpose: the same offline and in production, no model or embedding call; docs/extraction.md shows where pairs fall.
 */
export const NEAR_DUPLICATE = 0.8;

/** A memory's text as the duplicate check compares it, computed once. */
export interface ComparableText {
  /** Lowercase words and digits, single-spaced. */
  normal: string;
  /** Stemmed words without stop words. */
  terms: Set<string>;
  /** Whether it says something is not so (not, never, no longer, n't, ...). */
  negated: boolean;
  /** Numbers, as digits and number words. */
  numbers: string;
  /** Months, weekdays and days named relative to the turn. */
  dates: string;
  /** Capitalised names inside the text (not the first word of a sentence). */
  names: string;
}

export function comparable(text: string): ComparableText {
  const expanded = expandContractions(text);
  const normal = normalText(expanded);
  const words = normal === "" ? [] : normal.split(" ");
  // The negation is the polarity guard's to compare; as words, "no longer" and "not ... anymore" say the same.
  const affirmed = normalText(expanded.replace(NEGATIONS, " "));
  return {
    normal,
    terms: new Set((affirmed === "" ? [] : affirmed.split(" ")).filter((w) => !STOPWORDS.has(w)).map(porterStem)),
    negated: NEGATION.test(expanded),
    numbers: sortedSet(words.filter((w) => /^\d/.test(w) || NUMBER_WORDS.has(w))),
    dates: sortedSet(words.filter((w) => DATE_WORDS.has(w) || (w === "may" && /\bMay\b/.test(text)))),
    names: sortedSet(namesIn(text)),
  };
}

/**
 * Why two texts that look alike do not say the same thing, or null when nothing tells them apart: a negation on one
 * side only, other numbers, other dates, other names. "Sam does not like sushi" is no duplicate of "Sam likes sushi".
 */
export function meaningGuard(a: ComparableText, b: ComparableText): string | null {
  if (a.negated !== b.negated) return "one says not (a negation) and the other does not";
  if (a.numbers !== b.numbers) return `they differ in a number (${show(a.numbers)} / ${show(b.numbers)})`;
  if (a.dates !== b.dates) return `they differ in a date (${show(a.dates)} / ${show(b.dates)})`;
  if (a.names !== b.names) return `they differ in a name (${show(a.names)} / ${show(b.names)})`;
  return null;
}

/** How alike two texts are: the same (normalized) text, near (Jaccard at or over NEAR_DUPLICATE), or apart. */
export function likeness(a: ComparableText, b: ComparableText): { same: boolean; near: boolean; jaccard: number } {
  const score = jaccard(a.terms, b.terms);
  return { same: a.normal === b.normal, near: score >= NEAR_DUPLICATE, jaccard: score };
}

/** "doesn't" as "does not", "can't" as "can not", "won't" as "will not": one negation, however it is written. */
function expandContractions(text: string): string {
  return text
    .replace(/\bwon['’]t\b/gi, "will not")
    .replace(/\bcan['’]t\b/gi, "can not")
    .replace(/n['’]t\b/gi, " not");
}

/** Lowercase words and digits, single-spaced: what "the same text" compares. */
export function normalText(text: string): string {
  return text
    .toLowerCase()
    .replace(/[^\p{L}\p{M}\p{N}]+/gu, " ")
    .trim();
}

export function jaccard(a: ReadonlySet<string>, b: ReadonlySet<string>): number {
  if (a.size === 0 && b.size === 0) return 1;
  let shared = 0;
  for (const term of a) if (b.has(term)) shared++;
  return shared / (a.size + b.size - shared);
}

/**
 * Words that deny (docs/extraction.md lists them): not, no, never, none, nobody, nothing, nowhere, neither, nor,
 * without, cannot, no longer, anymore, any more, any longer, and every contraction in n't (don't, doesn't, isn't,
 * won't, can't...), which expandContractions writes as "not".
 */
const NEGATION_SOURCE =
  "\\b(?:no longer|any (?:more|longer)|not|no|never|none|nobody|nothing|nowhere|neither|nor|without|cannot|anymore)\\b";
const NEGATION = new RegExp(NEGATION_SOURCE, "i");
const NEGATIONS = new RegExp(NEGATION_SOURCE, "gi");

const NUMBER_WORDS = new Set(
  (
    "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen seventeen " +
    "eighteen nineteen twenty thirty forty fifty sixty seventy eighty ninety hundred thousand million billion " +
    "once twice thrice half dozen first second third fourth fifth sixth seventh eighth ninth tenth"
  ).split(" "),
);

const DATE_WORDS = new Set(
  (
    "january february march april june july august september october november december jan feb mar apr jun jul " +
    "aug sep sept oct nov dec monday tuesday wednesday thursday friday saturday sunday yesterday today tomorrow " +
    "tonight weekend spring summer autumn fall winter christmas easter"
  ).split(" "),
);

/** Capitalised words that are not a sentence's first word, possessives made plain ("Anna's" is Anna). */
function namesIn(text: string): string[] {
  const names: string[] = [];
  for (const sentence of text.split(/[.!?;:]\s+/)) {
    const words = sentence.trim().split(/\s+/).slice(1);
    for (const word of words) {
      const bare = word.replace(/^[^\p{L}]+|[^\p{L}\p{M}]+$/gu, "").replace(/['’]s$/u, "");
      if (/^\p{Lu}/u.test(bare) && !STOPWORDS.has(bare.toLowerCase()) && !DATE_WORDS.has(bare.toLowerCase()))
        names.push(bare.toLowerCase());
    }
  }
  return names;
}

function sortedSet(values: readonly string[]): string {
  return [...new Set(values)].sort().join(" ");
}

function show(values: string): string {
  return values === "" ? "none" : values;
}
