import { indexTokens, storedTerm } from "../../shared/fts-text";
import { STOPWORDS } from "../../shared/stopwords";

/**
 * A chunk's forward index, `chunks.term_freqs`: the terms its keyword row holds (as chunks_fts stores them,
 * without the tenant's code) with their BM25 frequency, so search can score a chunk for a common word by
 * reading the chunk's row instead of the word's whole posting list (tops.ts).
 *
 * Text, not JSON: " stem stem:1.5 " (a term that occurs once in the content is bare, others carry their
 * frequency: content counts 1, context CONTEXT_WEIGHT), which SQLite reads with instr() and no parse, and which is
 * shorter than the same terms as a JSON object. Terms that stem like a stopword are left out: queries drop stopwords,
 * and a query term that stems like one is read from its posting list instead (`forwardKey` is null for it).
 */

let stopStemSet: ReadonlySet<string> | null = null;

/** What the stopwords stem to, built at first use. */
function stopStems(): ReadonlySet<string> {
  return (stopStemSet ??= new Set([...STOPWORDS].map((word) => storedTerm("", word))));
}

function forwardIndexed(stem: string): boolean {
  return !stopStems().has(stem);
}

/** The stored terms (in the tenant's term space, `code`) that the forward index leaves out. */
export function unkeyedTerms(code: string): string[] {
  return [...stopStems()].map((stem) => code + stem);
}

/**
 * A stored term's key in the forward index (the term without the tenant's `code`), or null when the forward
 * index leaves it out.
 */
export function forwardKey(code: string, stored: string): string | null {
  // A token the stemmer takes to the code alone ("s", as in "Medicare's") is keyed "~", which no token is.
  const stem = stored.slice(code.length) || "~";
  return forwardIndexed(stem) ? stem : null;
}

/** The forward index of a chunk (in the tenant's term space, `code`): content tokens count 1, context tokens `contextWeight`. */
export function termFreqs(code: string, content: string, context: string, contextWeight: number): string {
  const counts = new TermCounts(code);
  for (const token of indexTokens(content)) counts.add(token, 1);
  for (const token of indexTokens(context)) counts.add(token, contextWeight);
  return counts.text();
}

/** A forward index being counted, token by token (as indexTokens gives them), then written as term_freqs' text. */
export class TermCounts {
  private readonly freqs = new Map<string, number>();
  private keys: Map<string, string | null>;
  constructor(private readonly code: string) {
    this.keys = forwardKeysOf(code);
  }

  add(token: string, weight: number): void {
    let key = this.keys.get(token);
    if (key === undefined) {
      key = newForwardKey(this.code, token);
      this.keys = forwardKeysOf(this.code); // a new map when the cache was emptied for this key
    }
    if (key !== null) this.freqs.set(key, (this.freqs.get(key) ?? 0) + weight);
  }

  text(): string {
    let text = " ";
    for (const [key, f] of this.freqs) text += f === 1 ? `${key} ` : `${key}:${f} `;
    return text;
  }
}

/**
 * Tokens' forward keys in a tenant's term space, kept per code and token: a write looks up every word of its chunks,
 * mostly words it has seen, and keying by the token alone spares building the coded string for each. Emptied whole
 * past KEYS_KEPT (a vocabulary larger than that is rare in one isolate).
 */
function forwardKeysOf(code: string): Map<string, string | null> {
  let keys = keysByCode.get(code);
  if (!keys) keysByCode.set(code, (keys = new Map()));
  return keys;
}

function newForwardKey(code: string, token: string): string | null {
  if (keysKept >= KEYS_KEPT) {
    keysByCode = new Map();
    keysKept = 0;
  }
  const key = forwardKey(code, storedTerm(code, token));
  forwardKeysOf(code).set(token, key);
  keysKept++;
  return key;
}
let keysByCode = new Map<string, Map<string, string | null>>();
let keysKept = 0;
const KEYS_KEPT = 50_000;

/**
 * SQL for a term's frequency in a chunk's forward index, NULL when absent: `freqs` the chunk's term_freqs,
 * `bare` and `tagged` the term's key as ' key ' and ' key:'.
 */
export function forwardFreqSql(freqs: string, bare: string, tagged: string): string {
  return `CASE WHEN instr(${freqs}, ${bare}) > 0 THEN 1.0 ELSE CAST(substr(${freqs}, NULLIF(instr(${freqs}, ${tagged}), 0) + length(${tagged})) AS REAL) END`;
}

/**
 * A term's frequency in a forward index (as forwardFreqSql reads it), 0 when absent; `key` as forwardKey gives it. The
 * text is searched for the key, then the character before it must be a space: searching for " key" instead starts a
 * comparison at every space, and spaces come far more often than the key's first character.
 */
export function forwardFreq(freqs: string, key: string): number {
  for (let at = freqs.indexOf(key, 1); at >= 0; at = freqs.indexOf(key, at + 1)) {
    if (freqs.charCodeAt(at - 1) !== SPACE) continue;
    const next = freqs.charCodeAt(at + key.length);
    if (next === SPACE) return 1;
    if (next === COLON) return Number.parseFloat(freqs.slice(at + key.length + 1, freqs.indexOf(" ", at + key.length)));
  }
  return 0;
}

const SPACE = 32;
const COLON = 58;
