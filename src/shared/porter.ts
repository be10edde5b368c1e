/**
 * The Porter stemmer exactly as SQLite's FTS5 `porter` tokenizer applies it (ext/fts5/fts5_tokenize.c),
 * over the UTF-8 bytes of a token that unicode61 has already folded. Keyword ranking reads the index
 * through `fts5vocab`, which is keyed by the stored (stemmed) terms, so a query term must be stemmed
 * to the very bytes FTS5 stored; test/keyword-ranking.test.ts compares the two over real text.
 */

/** FTS5 passes tokens longer than this (in bytes), or shorter than 3, through unstemmed. */
const MAX_TOKEN_BYTES = 64;

type Condition = (stem: Uint8Array, n: number) => boolean;
type Rule = [suffix: string, condition: Condition | null, replacement: string];

const A = 97,
  E = 101,
  I = 105,
  O = 111,
  U = 117,
  Y = 121;
const ch = (c: string) => c.charCodeAt(0);

function isVowel(c: number, yIsVowel: boolean): boolean {
  return c === A || c === E || c === I || c === O || c === U || (yIsVowel && c === Y);
}

/** Length of the first [C]VC prefix of stem[from..from+n) (0 when there is none). */
function gobbleVC(stem: Uint8Array, from: number, n: number, prevConsonant: boolean): number {
  let consonant = prevConsonant;
  let i = 0;
  for (; i < n; i++) {
    consonant = !isVowel(stem[from + i]!, consonant);
    if (!consonant) break;
  }
  for (i++; i < n; i++) {
    consonant = !isVowel(stem[from + i]!, consonant);
    if (consonant) return i + 1;
  }
  return 0;
}

const mGt0: Condition = (s, n) => gobbleVC(s, 0, n, false) !== 0;
const mGt1: Condition = (s, n) => {
  const k = gobbleVC(s, 0, n, false);
  return k !== 0 && gobbleVC(s, k, n - k, true) !== 0;
};
const mEq1: Condition = (s, n) => {
  const k = gobbleVC(s, 0, n, false);
  return k !== 0 && gobbleVC(s, k, n - k, true) === 0;
};
const oStar: Condition = (s, n) => {
  const last = s[n - 1];
  if (last === ch("w") || last === ch("x") || last === ch("y")) return false;
  let mask = 0;
  let consonant = false;
  for (let i = 0; i < n; i++) {
    consonant = !isVowel(s[i]!, consonant);
    mask = ((mask << 1) + (consonant ? 1 : 0)) & 0xffff;
  }
  return (mask & 7) === 5;
};
const mGt1SorT: Condition = (s, n) => (s[n - 1] === ch("s") || s[n - 1] === ch("t")) && mGt1(s, n);
const hasVowel: Condition = (s, n) => {
  for (let i = 0; i < n; i++) if (isVowel(s[i]!, i > 0)) return true;
  return false;
};

const STEP2: Rule[] = [
  ["ational", mGt0, "ate"],
  ["tional", mGt0, "tion"],
  ["enci", mGt0, "ence"],
  ["anci", mGt0, "ance"],
  ["izer", mGt0, "ize"],
  ["logi", mGt0, "log"],
  ["bli", mGt0, "ble"],
  ["alli", mGt0, "al"],
  ["entli", mGt0, "ent"],
  ["eli", mGt0, "e"],
  ["ousli", mGt0, "ous"],
  ["ization", mGt0, "ize"],
  ["ation", mGt0, "ate"],
  ["ator", mGt0, "ate"],
  ["alism", mGt0, "al"],
  ["iveness", mGt0, "ive"],
  ["fulness", mGt0, "ful"],
  ["ousness", mGt0, "ous"],
  ["aliti", mGt0, "al"],
  ["iviti", mGt0, "ive"],
  ["biliti", mGt0, "ble"],
];
const STEP3: Rule[] = [
  ["ical", mGt0, "ic"],
  ["ness", mGt0, ""],
  ["icate", mGt0, "ic"],
  ["iciti", mGt0, "ic"],
  ["ful", mGt0, ""],
  ["ative", mGt0, ""],
  ["alize", mGt0, "al"],
];
const STEP4: Rule[] = [
  ["al", mGt1, ""],
  ["ance", mGt1, ""],
  ["ence", mGt1, ""],
  ["er", mGt1, ""],
  ["ic", mGt1, ""],
  ["able", mGt1, ""],
  ["ible", mGt1, ""],
  ["ant", mGt1, ""],
  ["ement", mGt1, ""],
  ["ment", mGt1, ""],
  ["ent", mGt1, ""],
  ["ion", mGt1SorT, ""],
  ["ou", mGt1, ""],
  ["ism", mGt1, ""],
  ["ate", mGt1, ""],
  ["iti", mGt1, ""],
  ["ous", mGt1, ""],
  ["ive", mGt1, ""],
  ["ize", mGt1, ""],
];
const STEP1B2: Rule[] = [
  ["at", null, "ate"],
  ["bl", null, "ble"],
  ["iz", null, "ize"],
];

const encoder = new TextEncoder();
const decoder = new TextDecoder();

class Buffer {
  bytes = new Uint8Array(MAX_TOKEN_BYTES + 64);
  n = 0;
  endsWith(suffix: string): boolean {
    if (this.n <= suffix.length) return false; // FTS5 requires a non-empty stem (nBuf > suffix length)
    for (let i = 0; i < suffix.length; i++)
      if (this.bytes[this.n - suffix.length + i] !== suffix.charCodeAt(i)) return false;
    return true;
  }
  replace(suffixLength: number, replacement: string): void {
    this.n -= suffixLength;
    for (let i = 0; i < replacement.length; i++) this.bytes[this.n++] = replacement.charCodeAt(i);
  }
  /** The first rule whose suffix matches decides (as FTS5's generated switch does); true if it fired. */
  apply(rules: Rule[]): boolean {
    for (const [suffix, condition, replacement] of rules) {
      if (!this.endsWith(suffix)) continue;
      if (condition && !condition(this.bytes, this.n - suffix.length)) return false;
      this.replace(suffix.length, replacement);
      return true;
    }
    return false;
  }
  last(k = 1): number {
    return this.bytes[this.n - k]!;
  }
}

/** Stems one folded token (lower case, diacritics removed) as FTS5's porter tokenizer does. */
export function porterStem(token: string): string {
  const input = encoder.encode(token);
  if (input.length > MAX_TOKEN_BYTES || input.length < 3) return token;
  const b = new Buffer();
  b.bytes.set(input);
  b.n = input.length;

  // Step 1a.
  if (b.last() === ch("s")) {
    if (b.last(2) === ch("e")) {
      if ((b.n > 4 && b.last(4) === ch("s") && b.last(3) === ch("s")) || (b.n > 3 && b.last(3) === ch("i"))) b.n -= 2;
      else b.n -= 1;
    } else if (b.last(2) !== ch("s")) {
      b.n -= 1;
    }
  }
  // Step 1b.
  let step1b = false;
  if (b.endsWith("eed")) {
    if (mGt0(b.bytes, b.n - 3)) b.replace(3, "ee");
  } else if (b.endsWith("ed")) {
    if (hasVowel(b.bytes, b.n - 2)) {
      b.n -= 2;
      step1b = true;
    }
  } else if (b.endsWith("ing")) {
    if (hasVowel(b.bytes, b.n - 3)) {
      b.n -= 3;
      step1b = true;
    }
  }
  if (step1b && !b.apply(STEP1B2)) {
    const c = b.last();
    if (!isVowel(c, false) && c !== ch("l") && c !== ch("s") && c !== ch("z") && c === b.last(2)) b.n -= 1;
    else if (mEq1(b.bytes, b.n) && oStar(b.bytes, b.n)) b.bytes[b.n++] = E;
  }
  // Step 1c.
  if (b.last() === Y && hasVowel(b.bytes, b.n - 1)) b.bytes[b.n - 1] = I;
  // Steps 2 to 4.
  b.apply(STEP2);
  b.apply(STEP3);
  b.apply(STEP4);
  // Step 5a.
  if (b.last() === E && (mGt1(b.bytes, b.n - 1) || (mEq1(b.bytes, b.n - 1) && !oStar(b.bytes, b.n - 1)))) b.n -= 1;
  // Step 5b.
  if (b.n > 1 && b.last() === ch("l") && b.last(2) === ch("l") && mGt1(b.bytes, b.n - 1)) b.n -= 1;
  return decoder.decode(b.bytes.subarray(0, b.n));
}
