import { CJK_LETTER, NON_CJK_WORD } from "../cjk";
import { STOPWORDS } from "../stopwords";

/**
 * Text as the FTS5 index sees it, and user text as a safe FTS5 query.
 * unicode61 makes a run of CJK characters one token, so each CJK character is spaced out on both
 * sides (index and query); a CJK run in a query becomes a phrase of its characters.
 */

const CJK = new RegExp(CJK_LETTER, "u");
const CJK_GLOBAL = new RegExp(`(${CJK_LETTER})`, "gu");
/** Words as unicode61 splits them (letters, digits, marks); a CJK run is one token, split below. */
const QUERY_TOKENS = new RegExp(`${CJK_LETTER}+|${NON_CJK_WORD}`, "gu");

const MAX_QUERY_TERMS = 32;

export function ftsIndexText(content: string): string {
  return content.replace(CJK_GLOBAL, " $1 ");
}

/**
 * Builds an FTS5 query from arbitrary user text: every term is a quoted string, terms are OR-ed
 * (BM25 ranks documents matching more of them higher). Quotes, operators (AND/OR/NOT/NEAR), `*`,
 * `-`, `^`, parentheses and emoji cannot reach FTS5's parser. Returns null when nothing is searchable.
 */
export function ftsQuery(text: string): string | null {
  const terms: string[] = [];
  const seen = new Set<string>();
  for (const match of text.matchAll(QUERY_TOKENS)) {
    const token = match[0].toLowerCase();
    const term = CJK.test(token) ? [...token].join(" ") : token;
    if (seen.has(term)) continue;
    seen.add(term);
    terms.push(`"${term.replace(/"/g, '""')}"`);
  }
  if (terms.length === 0) return null;
  const meaningful = terms.filter((t) => !STOPWORDS.has(t.slice(1, -1)));
  return (meaningful.length > 0 ? meaningful : terms).slice(0, MAX_QUERY_TERMS).join(" OR ");
}
