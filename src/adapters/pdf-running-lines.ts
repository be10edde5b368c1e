// A PDF's running headers and footers: the title, chapter or "Confidential" line printed at the top or bottom of
// every page, and page numbers. They are layout, not content: left in, they land in every chunk of the document,
// are matched by every query that names them, and split a paragraph that runs on to the next page.

/** Lines at each end of a page that may be running ones. */
const EDGE_LINES = 2;
/** A line is running when it stands at a page's edge on this share of the pages (and on 3 at least). */
const RUNNING_SHARE = 0.6;
/** Running lines are set no larger than the body text (a heading repeated at the top of pages is larger). */
const MAX_SIZE_RATIO = 1.05;
/** A page number alone: "7", "- 7 -", "Page 7", "Page 7 of 20", "7 / 20". */
const PAGE_NUMBER =
  /^[\s\-–—|[(]*(?:page|p\.|seite|página|pagina)?\s*\d{1,4}\s*(?:(?:of|\/|de|von|sur)\s*\d{1,4})?[\s\-–—|\])]*$/i;

/** The pages without their running headers and footers and their page numbers (lines in reading order). */
export function withoutRunningLines<Line extends { text: string; size: number }>(pages: readonly Line[][]): Line[][] {
  const body = bodySize(pages.flat());
  // The page's own number stands for any ("Page 3 of 20" is one line on every page); other numbers stay what they
  // are, so "Article 3" and "Article 7" at the top of their pages are two lines.
  const signature = (line: Line, page: number) =>
    line.text
      .toLowerCase()
      .replace(new RegExp(`(?<!\\d)${page}(?!\\d)`, "g"), "#")
      .replace(/\s+/g, " ")
      .trim();
  const edges = (lines: readonly Line[]) => {
    const top = lines.slice(0, EDGE_LINES);
    const candidates = [...top, ...lines.slice(Math.max(top.length, lines.length - EDGE_LINES))];
    return candidates.filter((line) => line.size <= body * MAX_SIZE_RATIO);
  };
  const pagesWith = new Map<string, number>();
  pages.forEach((lines, i) => {
    for (const key of new Set(edges(lines).map((line) => signature(line, i + 1))))
      pagesWith.set(key, (pagesWith.get(key) ?? 0) + 1);
  });
  const needed = Math.max(3, Math.ceil(pages.length * RUNNING_SHARE));
  const running = new Set([...pagesWith].filter(([, n]) => n >= needed).map(([key]) => key));
  return pages.map((lines, i) => {
    const edge = new Set(edges(lines));
    const first = lines[0];
    const last = lines[lines.length - 1];
    return lines.filter(
      (line) =>
        !(edge.has(line) && running.has(signature(line, i + 1))) &&
        !((line === first || line === last) && PAGE_NUMBER.test(line.text)),
    );
  });
}

/** The size most of the text is set in. */
function bodySize(lines: readonly { text: string; size: number }[]): number {
  const chars = new Map<number, number>();
  for (const line of lines) {
    const size = Math.round(line.size * 10) / 10;
    chars.set(size, (chars.get(size) ?? 0) + line.text.length);
  }
  return [...chars.entries()].sort((a, b) => b[1] - a[1])[0]?.[0] ?? Number.POSITIVE_INFINITY;
}
