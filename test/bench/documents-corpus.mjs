// The documents suite's corpus (documents.mjs): passages grouped into documents, and each document as HTML for
// Chromium to print (a title, then every passage a section under a heading of its own) and as plain text (the passages
// one after another, no headings). Pure: the node test runs it on made-up passages.

/** Passages a document holds in the retrieval comparison. */
export const PASSAGES_PER_DOCUMENT = 10;

/**
 * Documents of `size` consecutive passages in the order given (the last may hold fewer), titled "Document n" from 1.
 * Consecutive in the sample's own order, so the grouping is the same on every run and mixes topics as the sample does.
 */
export function groupPassages(passages, size = PASSAGES_PER_DOCUMENT) {
  const documents = [];
  for (let i = 0; i < passages.length; i += size)
    documents.push({ title: `Document ${documents.length + 1}`, passages: passages.slice(i, i + size) });
  return documents;
}

/**
 * The heading of a document's k-th passage (1-based). It names the passage's place and nothing of its content, so it
 * adds no word a query could match: what the headings change is the cutting and the citation, not the words.
 */
export const passageHeading = (k) => `Passage ${k}`;

/** The passage a heading names ("Passage 3" -> 3), or null. */
export function headingNumber(heading) {
  const match = /^Passage (\d+)$/.exec(heading.trim());
  return match ? Number(match[1]) : null;
}

const escapeHtml = (text) => text.replace(/[&<>"]/g, (c) => `&#${c.charCodeAt(0)};`);

const STYLE = `body { font: 11pt/1.4 "DejaVu Serif", serif; margin: 0; }
h1 { font-size: 20pt; margin: 0 0 12pt; }
h2 { font-size: 14pt; margin: 12pt 0 4pt; }
p { margin: 0 0 6pt; }
.page { break-after: page; }
.page:last-child { break-after: auto; }`;

/**
 * The document as an HTML page to print: its title (the PDF's /Title and its one level-1 heading), then each passage
 * under its heading. `perPage` puts a page break after every `perPage` passages (the per-page files); without it the
 * text flows over as many pages as it fills.
 */
export function documentHtml(document, { perPage } = {}) {
  const sections = document.passages.map(
    (p, i) => `<h2>${escapeHtml(passageHeading(i + 1))}</h2>\n<p>${escapeHtml(p.text)}</p>`,
  );
  const pages = [];
  const every = perPage ?? sections.length;
  for (let i = 0; i < sections.length; i += every)
    pages.push(`<section class="page">\n${sections.slice(i, i + every).join("\n")}\n</section>`);
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>${escapeHtml(document.title)}</title><style>${STYLE}</style></head>
<body><h1>${escapeHtml(document.title)}</h1>
${pages.join("\n")}
</body></html>`;
}

/**
 * The same document as a web page: the article between what a site puts around it (navigation, a cookie banner, a
 * sidebar, a footer), which the converter's Readability is to leave out.
 */
export function webPageHtml(document) {
  const links = ["Home", "Archive", "Topics", "About us", "Contact"].map((l) => `<a href="#">${l}</a>`).join(" | ");
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>${escapeHtml(document.title)} | Reference site</title></head>
<body>
<div class="cookie-banner">We use cookies to improve your experience. <button>Accept all</button></div>
<header><nav>${links}</nav></header>
<main><article>
<h1>${escapeHtml(document.title)}</h1>
${document.passages.map((p, i) => `<h2>${escapeHtml(passageHeading(i + 1))}</h2>\n<p>${escapeHtml(p.text)}</p>`).join("\n")}
</article></main>
<aside><h3>Popular</h3><ul><li><a href="#">Most read this week</a></li><li><a href="#">Editor's picks</a></li></ul></aside>
<footer>© Reference site. All rights reserved. <a href="#">Privacy</a> <a href="#">Terms</a></footer>
</body></html>`;
}

/** The document's paragraphs for a Word file: the title as Heading 1, each passage under a Heading 2. */
export function documentParagraphs(document) {
  return [
    { heading: 1, text: document.title },
    ...document.passages.flatMap((p, i) => [{ heading: 2, text: passageHeading(i + 1) }, { text: p.text }]),
  ];
}

/** The document as plain text: the passages one after another, a blank line between, no title and no headings. */
export function documentText(document) {
  return document.passages.map((p) => p.text).join("\n\n");
}
