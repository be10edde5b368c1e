import type { ConvertedDocument } from "../ports";
import { cleanHeading, markdownBlocks } from "../shared/document-blocks";

// A web page's main content: linkedom builds the DOM (no browser needed), Mozilla's Readability picks the article
// (navigation, footers, sidebars and cookie banners dropped), node-html-markdown writes it as Markdown, whose
// headings become sections. Loaded on first use.

/** Elements that are never content, removed before Readability looks (it keeps some of them in short pages). */
const NEVER_CONTENT =
  "script, style, noscript, template, iframe, svg, nav, form, [role=navigation], [role=banner], [role=contentinfo], [role=dialog], [aria-modal=true]";
/**
 * The page's own header, footer and sidebars, removed too; inside an article or the main content the same elements
 * are the article's (its title and byline, a section's heading, a note set aside) and stay.
 */
const PAGE_CHROME = "header, footer, aside";
const CONTENT = "article, main, [role=main]";
/** Cookie and consent banners by their ids and classes. */
const BANNER = /cookie|consent|gdpr|banner|newsletter|subscribe|popup|modal/i;

export async function convertHtml(html: string, options: { wholePage?: boolean } = {}): Promise<ConvertedDocument> {
  const [{ parseHTML }, { Readability }, { NodeHtmlMarkdown }] = await Promise.all([
    import("linkedom"),
    import("@mozilla/readability"),
    import("node-html-markdown"),
  ]);
  const { document } = parseHTML(html);
  const pageTitle = document.querySelector("title")?.textContent?.trim() || null;
  for (const element of [...document.querySelectorAll(NEVER_CONTENT)]) element.remove();
  for (const element of [...document.querySelectorAll(PAGE_CHROME)]) {
    if (!element.parentElement?.closest(CONTENT)) element.remove();
    // Readability drops every aside: an article's own (a note, a warning) is kept as a plain block.
    else if (element.tagName === "ASIDE") {
      const block = document.createElement("div");
      block.append(...element.childNodes);
      element.replaceWith(block);
    }
  }
  for (const element of [...document.querySelectorAll("[id], [class]")]) {
    const label = `${element.getAttribute("id") ?? ""} ${element.getAttribute("class") ?? ""}`;
    if (BANNER.test(label) && !element.querySelector("h1, article, main")) element.remove();
  }
  let content: string;
  let title = pageTitle;
  // A document written as HTML (a Word file's conversion) is all content; a web page's article is what Readability keeps.
  const article = options.wholePage
    ? null
    : new Readability(document as unknown as ConstructorParameters<typeof Readability>[0], {
        charThreshold: 200,
      }).parse();
  if (article?.content) {
    content = article.content;
    title = article.title?.trim() || pageTitle;
  } else {
    content = (document.querySelector("main") ?? document.querySelector("body") ?? document).toString();
  }
  const markdown = NodeHtmlMarkdown.translate(content, {
    useLinkReferenceDefinitions: false,
    maxConsecutiveNewlines: 2,
  });
  const blocks = markdownBlocks(markdown);
  // Readability takes the article's H1 out as its title: put it back on top, so section paths start where a
  // Markdown document's would ("Runbook > Rollback").
  if (article?.title && !blocks.some((b) => b.kind === "heading" && b.level === 1))
    blocks.unshift({ kind: "heading", level: 1, text: cleanHeading(article.title) });
  return { title: title ?? firstHeading(blocks), pages: null, blocks };
}

function firstHeading(blocks: ReturnType<typeof markdownBlocks>): string | null {
  const heading = blocks.find((b) => b.kind === "heading");
  return heading ? heading.text : null;
}
