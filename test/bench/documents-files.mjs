// Real files for the documents suite (documents.mjs): PDFs printed by Chromium (playwright-core's page.pdf(), as a
// browser or a report generator makes them: a text layer, no outline, headings by font size), a Word file, a web page.
import { launchBrowser } from "../browser/browser.mjs";
import { makeDocx } from "../fixtures/make-docx.ts";
import { documentHtml, documentParagraphs, webPageHtml } from "./documents-corpus.mjs";

/** Prints each HTML page to a PDF (A4) in one headless Chromium; answers the PDFs' bytes in order. */
export async function printPdfs(htmls) {
  const browser = await launchBrowser();
  try {
    const page = await browser.newPage();
    const pdfs = [];
    for (const html of htmls) {
      await page.setContent(html, { waitUntil: "load" });
      pdfs.push(
        new Uint8Array(
          await page.pdf({ format: "A4", margin: { top: "2cm", bottom: "2cm", left: "2cm", right: "2cm" } }),
        ),
      );
    }
    return pdfs;
  } finally {
    await browser.close();
  }
}

/** Passages a page of the per-page PDFs holds (a page break after each group); six overflowed some A4 pages. */
export const PASSAGES_PER_PAGE = 5;

/**
 * The per-page files: PDFs of 1, 5 and 20 pages, and a Word file and a web page holding the 5-page PDF's text. Each
 * {name, type, bytes, pages, passages}, `pages` the PDF's page count the figures are divided by (for the Word file and
 * the web page, the 5-page PDF's). The arguments: documents ({title, passages}) of PASSAGES_PER_PAGE passages a page.
 */
export async function perPageFiles(onePage, fivePages, twentyPages) {
  const sized = [
    [onePage, 1],
    [fivePages, 5],
    [twentyPages, 20],
  ];
  const pdfs = await printPdfs(sized.map(([document]) => documentHtml(document, { perPage: PASSAGES_PER_PAGE })));
  const files = sized.map(([document, pages], i) => ({
    name: `PDF, ${pages} page${pages === 1 ? "" : "s"}`,
    type: "application/pdf",
    bytes: pdfs[i],
    pages,
    passages: document.passages.length,
  }));
  files.push(
    {
      name: "Word file (the 5-page text)",
      type: "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
      bytes: makeDocx(documentParagraphs(fivePages)),
      pages: 5,
      passages: fivePages.passages.length,
    },
    {
      name: "web page (the 5-page text)",
      type: "text/html",
      bytes: new TextEncoder().encode(webPageHtml(fivePages)),
      pages: 5,
      passages: fivePages.passages.length,
    },
  );
  return files;
}
