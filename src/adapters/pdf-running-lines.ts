// A PDF's running headers and footers: the title, chapter or "Confidential" line printed at the top or bottom of
// every page, and page numbers. They are layout, not content: left in, they land in every chunk of the document,
// are matched by every query that names them, and split a paragraph that runs on to the next page.

/** Lines at each end of a page that may be running ones. */
const EDGE_LINES = 2;
/** A line is running when it stands at a page's edge on this share of the pages (and on 3 at least). */
const RUNNING_SHARE = 0.6;
/** A page number alone: "7", "- 7 -", "Page 7", "Page 7 of 20", "7 / 20". */
const PAGE_NUMBER =
  /^[\s\-–—|[(]*(?:page|p\.|seite|página|pagina)?\s*\d{1,4}\s*(?:(?:of|\/|de|von|sur)\s*\d{1,4})?[\s\-–—|\])]*$/i;

/** The pages without their running headers and footers and their page numbers (lines in reading order). */
export function withoutRunningLines<Line extends { text: string }>(pages: readonly Line[][]): Line[][] {
  const signature = (line: Line) => line.text.toLowerCase().replace(/\d+/g, "#").replace(/\s+/g, " ").trim();
  const edges = (lines: readonly Line[]) => {
    const top = lines.slice(0, EDGE_LINES);
    return [...top, ...lines.slice(Math.max(top.length, lines.length - EDGE_LINES))];
  };
  const pagesWith = new Map<string, number>();
  for (const lines of pages)
    for (const key of new Set(edges(lines).map(signature))) pagesWith.set(key, (pagesWith.get(key) ?? 0) + 1);
  const needed = Math.max(3, Math.ceil(pages.length * RUNNING_SHARE));
  const running = new Set([...pagesWith].filter(([, n]) => n >= needed).map(([key]) => key));
  return pages.map((lines) => {
    const edge = new Set(edges(lines));
    const first = lines[0];
    const last = lines[lines.length - 1];
    return lines.filter(
      (line) =>
        !(edge.has(line) && running.has(signature(line))) &&
        !((line === first || line === last) && PAGE_NUMBER.test(line.text)),
    );
  });
}
