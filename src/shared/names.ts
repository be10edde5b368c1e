// Names of people and keys as extraction compares them: NFKC, case-folded, letters of every script kept, so that
// "Иван" and "Пётр", "王伟" and "李娜", "Zoë" and "Zoe" stay apart and "CAROLINE" and "caroline" meet.

/** A name folded for comparison: NFKC, whitespace collapsed, case folded (upper then lower, as full folding maps ß). */
export function foldName(name: string): string {
  return name.normalize("NFKC").replace(/\s+/g, " ").trim().toUpperCase().toLowerCase();
}

/**
 * A name as one snake_case word of a storage key: folded, every run of characters other than letters, marks and
 * digits made one `_`. Empty when nothing is left (a name of punctuation only).
 */
export function nameSlug(name: string): string {
  return foldName(name)
    .replace(/[^\p{L}\p{M}\p{N}]+/gu, "_")
    .replace(/^_+|_+$/g, "");
}
