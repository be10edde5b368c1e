/**
 * One CJK letter (Han, kana, Hangul, and marks such as 'ー' that those scripts share).
 * Neither unicode61 nor whitespace splits CJK words, so text search treats each such letter as a word.
 */
export const CJK_LETTER = String.raw`(?:(?=[\p{L}\p{N}])[\p{scx=Han}\p{scx=Hiragana}\p{scx=Katakana}\p{scx=Hangul}])`;

/** A run of non-CJK letters, digits and marks: a word as unicode61 splits it. */
export const NON_CJK_WORD = String.raw`(?:(?!${CJK_LETTER})[\p{L}\p{N}\p{M}])+`;
