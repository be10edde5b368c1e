import { baseForm } from "./base-forms";
import { CJK_LETTER, NON_CJK_WORD } from "./cjk";
import { porterStem } from "./porter";
import { STOPWORDS } from "./stopwords";

/**
 * Text as the FTS5 index sees it, and user text as a safe FTS5 query.
 * unicode61 makes a run of CJK characters one token, so each CJK character is spaced out on both
 * sides (index and query); a CJK run in a query becomes a phrase of its characters.
 *
 * Tenant-private terms: every token a tenant indexes is prefixed with the tenant's keyword code
 * (six consonants derived from the tenant id), so `chunks_fts` holds a separate term space per
 * tenant: posting lists, document frequencies and MATCH only ever touch the tenant's own rows. The
 * code is consonants only so that the Porter stemmer, which FTS5 applies to the whole prefixed token,
 * measures the word as it would without the prefix. Codes may collide (20^6 of them); ranking is
 * still per tenant because every statement joins the tenant's chunks, a collision only costs time.
 */

const CJK = new RegExp(CJK_LETTER, "u");
/** No CJK letter comes before U+1100 (Hangul Jamo): a token that starts lower is no CJK letter, and needs no test. */
const FIRST_CJK = 0x1100;
const CJK_GLOBAL = new RegExp(`(${CJK_LETTER})`, "gu");
/**
 * A token as unicode61 splits it: letters and digits, with combining diacritics (which it folds
 * away) inside; other marks (e.g. Indic vowel signs) separate tokens. Starts with a letter or digit.
 */
const WORD = String.raw`(?:(?!${CJK_LETTER})[\p{L}\p{N}])(?:(?!${CJK_LETTER})[\p{L}\p{N}\u0300-\u036f])*`;
/** Index tokens: one CJK letter, or a word. */
const INDEX_TOKENS = new RegExp(`${CJK_LETTER}|${WORD}`, "gu");
/** What a user types as one word: a CJK run, or a run of other letters, digits and marks (a phrase of its tokens). */
const QUERY_RUNS = new RegExp(`${CJK_LETTER}+|${NON_CJK_WORD}`, "gu");
/** Letters unicode61 (remove_diacritics 2) folds to their base letter: Latin-1 to Latin Extended-B, Latin Extended Additional. */
const LATIN_WITH_DIACRITICS = /^[\u00c0-\u024f\u1e00-\u1eff]$/u;
const COMBINING_DIACRITICS = /[\u0300-\u036f]/gu;

const MAX_QUERY_TERMS = 32;
const CODE_LETTERS = "bcdfghjklmnpqrstvwxz";
export const KEYWORD_CODE_LENGTH = 6;

/** Legacy index text (rows written before tenant-private terms): CJK letters spaced out. */
export function ftsIndexText(content: string): string {
  return content.replace(CJK_GLOBAL, " $1 ");
}

/** The tenant's keyword code: six lower-case consonants, a pure function of the tenant id. */
export function keywordCode(tenantId: string): string {
  let h1 = 0x811c9dc5;
  let h2 = 0x01000193 ^ 0x5bd1e995;
  for (let i = 0; i < tenantId.length; i++) {
    const c = tenantId.charCodeAt(i);
    h1 = Math.imul(h1 ^ c, 0x01000193);
    h2 = Math.imul(h2 ^ c, 0x5bd1e995) ^ (h2 >>> 15);
  }
  let n = (h1 >>> 0) * 4096 + ((h2 >>> 0) & 0xfff);
  let code = "";
  for (let i = 0; i < KEYWORD_CODE_LENGTH; i++) {
    code += CODE_LETTERS[n % CODE_LETTERS.length];
    n = Math.floor(n / CODE_LETTERS.length);
  }
  return code;
}

export interface IndexedText {
  /** What goes into chunks_fts: every token prefixed with the tenant's code, CJK letters spaced out. */
  text: string;
  /** Number of tokens (the column's length for BM25). */
  tokens: number;
}

/** The tokens of a text as the index splits it (each CJK letter alone), irregular forms as their base form (base-forms.ts). */
export function indexTokens(content: string): string[] {
  return [...content.matchAll(INDEX_TOKENS)].map((m) => baseForm(m[0]));
}

/**
 * Text as a tenant's rows store it in chunks_fts (irregular forms as their base form, as queries ask for them).
 * `onToken` is given each token as indexTokens gives it, so a caller that also counts them reads the text once.
 */
export function tenantIndexText(code: string, content: string, onToken?: (token: string) => void): IndexedText {
  let tokens = 0;
  const text = content.replace(INDEX_TOKENS, (token) => {
    tokens++;
    const base = baseForm(token);
    onToken?.(base);
    return token.charCodeAt(0) >= FIRST_CJK && CJK.test(token) ? ` ${code}${token} ` : code + base;
  });
  return { text, tokens };
}

/**
 * The phrases of a query: each a list of lower-cased tokens (a word, or the letters of a CJK run),
 * deduplicated, stopwords dropped unless nothing else is left, at most 32. Null when nothing is searchable.
 */
export function queryPhrases(text: string): string[][] | null {
  const phrases: string[][] = [];
  const seen = new Set<string>();
  for (const match of text.matchAll(QUERY_RUNS)) {
    const phrase = [...match[0].toLowerCase().matchAll(INDEX_TOKENS)].map((m) => baseForm(m[0]));
    if (phrase.length === 0) continue;
    const key = phrase.join(" ");
    if (seen.has(key)) continue;
    seen.add(key);
    phrases.push(phrase);
  }
  if (phrases.length === 0) return null;
  const meaningful = phrases.filter((p) => p.length > 1 || !STOPWORDS.has(p[0]!));
  return (meaningful.length > 0 ? meaningful : phrases).slice(0, MAX_QUERY_TERMS);
}

/** One phrase as an FTS5 string, its tokens prefixed. */
export function phraseMatch(phrase: string[], prefix: string): string {
  return `"${phrase
    .map((t) => prefix + t)
    .join(" ")
    .replace(/"/g, '""')}"`;
}

function matchString(phrases: string[][], prefix: string): string {
  return phrases.map((p) => phraseMatch(p, prefix)).join(" OR ");
}

/**
 * Builds an FTS5 query from arbitrary user text: every term is a quoted string, terms are OR-ed
 * (BM25 ranks documents matching more of them higher). Quotes, operators (AND/OR/NOT/NEAR), `*`,
 * `-`, `^`, parentheses and emoji cannot reach FTS5's parser. Returns null when nothing is searchable.
 * These are the legacy (unprefixed) terms; `tenantFtsQuery` gives a tenant's own.
 */
export function ftsQuery(text: string): string | null {
  const phrases = queryPhrases(text);
  return phrases === null ? null : matchString(phrases, "");
}

/** The same query over the tenant's private terms. */
export function tenantFtsQuery(code: string, text: string): string | null {
  const phrases = queryPhrases(text);
  return phrases === null ? null : matchString(phrases, code);
}

/**
 * The term FTS5 stores for `token` (as `fts5vocab` lists it): unicode61 folds case and removes
 * diacritics, then porter stems the whole (prefixed) token.
 */
export function storedTerm(code: string, token: string): string {
  const prefixed = code + token;
  let term = recentTerms.get(prefixed);
  if (term !== undefined) return term;
  term = olderTerms.get(prefixed) ?? porterStem(fold(prefixed));
  if (recentTerms.size >= TERMS_PER_GENERATION) {
    olderTerms = recentTerms;
    recentTerms = new Map();
  }
  recentTerms.set(prefixed, term);
  return term;
}

/**
 * Terms already stemmed in this isolate: a search stems its query, the best hits' words (feedback) and the feedback
 * candidates, and a write stems every word of its chunks, mostly words stemmed before; stemming them anew is a
 * visible share of a search's or a write's worker time. Two generations of TERMS_PER_GENERATION (~2.5 MB each): when
 * the recent one is full it becomes the older one, so the words in use stay and a vocabulary larger than one
 * generation (MS MARCO's 5,000 passages hold 21,000 words) no longer empties the whole cache at once.
 */
let recentTerms = new Map<string, string>();
let olderTerms = new Map<string, string>();
const TERMS_PER_GENERATION = 25_000;

/** Letters unicode61 folds although case folding alone would not (or JS lower-casing does not). */
const FOLD_EXCEPTIONS: Record<string, string> = {
  "\u00b5": "\u03bc", // micro sign -> mu
  "\u017f": "s", // long s
  "\u1e9b": "s", // long s with dot
  "\u03c2": "\u03c3", // final sigma
  "\u03d0": "\u03b2",
  "\u03d1": "\u03b8",
  "\u03d5": "\u03c6",
  "\u03d6": "\u03c0",
  "\u03f0": "\u03ba",
  "\u03f1": "\u03c1",
  "\u03f5": "\u03b5",
  "\u1fbe": "\u03b9",
};
/** Latin letters with diacritics that unicode61 keeps (their base is itself not plain ASCII). */
const KEPT_DIACRITICS = new Set(["\u01e1", "\u01e3", "\u01ef", "\u01fd", "\u01ff"]);
// biome-ignore lint/suspicious/noControlCharactersInRegex: the ASCII range, NUL included, is the point
const NON_ASCII = /[^\u0000-\u007f]/gu;

/** Case and diacritic folding as unicode61 (remove_diacritics 2) does it, checked against FTS5 in the tests. */
function fold(token: string): string {
  return token
    .toLowerCase()
    .replace(
      NON_ASCII,
      (c) => FOLD_EXCEPTIONS[c] ?? (LATIN_WITH_DIACRITICS.test(c) && !KEPT_DIACRITICS.has(c) ? c.normalize("NFD") : c),
    )
    .replace(COMBINING_DIACRITICS, "");
}
