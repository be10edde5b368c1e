import { describe, expect, it } from "vitest";
import {
  documentHtml,
  documentParagraphs,
  documentText,
  groupPassages,
  headingNumber,
  type Passage,
} from "../bench/documents-corpus.mjs";
import {
  passageBySection,
  passageRanker,
  passagesByOverlap,
  scoreRankings,
  targetLine,
  wordPairs,
} from "../bench/documents-scoring.mjs";

// The documents suite's pure parts (test/bench/documents-corpus.mjs, documents-scoring.mjs) on made-up passages: the
// grouping into documents, the mapping of a document's hits to passages, the scores and the target line. No ../shared.

const WORDS = (
  "harbour lantern river meadow copper violet orchard signal falcon marble winter garden " +
  "pepper canyon ribbon thunder saddle quarry beacon willow ember glacier tundra walnut"
).split(" ");
/** 14 words drawn by a generator seeded by i (xorshift): passages share few word pairs, as real ones do. */
function passage(i: number): Passage {
  let x = ((i + 1) * 2_654_435_761) >>> 0;
  const next = () => {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    return x >>> 0;
  };
  return {
    _id: `p${i}`,
    text: `${Array.from({ length: 14 }, () => WORDS[next() % WORDS.length]).join(" ")} item ${i}.`,
  };
}
const PASSAGES = Array.from({ length: 25 }, (_, i) => passage(i));

describe("grouping passages into documents", () => {
  it("makes documents of ten consecutive passages, the last holding the rest, titled in order", () => {
    const documents = groupPassages(PASSAGES);
    expect(documents.map((d) => d.title)).toEqual(["Document 1", "Document 2", "Document 3"]);
    expect(documents.map((d) => d.passages.length)).toEqual([10, 10, 5]);
    expect(documents.flatMap((d) => d.passages)).toEqual(PASSAGES);
    expect(groupPassages(PASSAGES)).toEqual(documents);
  });

  it("prints each passage under a heading of its own, and page breaks when asked", () => {
    const document = { title: "Notes <draft>", passages: [...PASSAGES.slice(0, 4), { _id: "x", text: "a < b & c" }] };
    const html = documentHtml(document);
    expect(html).toContain("<title>Notes &#60;draft&#62;</title>");
    expect(html).toContain("<h1>Notes &#60;draft&#62;</h1>");
    expect(html.match(/<h2>Passage \d<\/h2>/g)).toHaveLength(5);
    expect(html).toContain("<p>a &#60; b &#38; c</p>");
    expect(html.match(/class="page"/g)).toHaveLength(1);
    expect(documentHtml(document, { perPage: 2 }).match(/class="page"/g)).toHaveLength(3);
    expect(documentParagraphs(document).slice(0, 3)).toEqual([
      { heading: 1, text: "Notes <draft>" },
      { heading: 2, text: "Passage 1" },
      { text: PASSAGES[0]!.text },
    ]);
  });

  it("writes the plain-text document without title or headings", () => {
    const [document] = groupPassages(PASSAGES.slice(0, 3));
    expect(documentText(document!)).toBe(
      PASSAGES.slice(0, 3)
        .map((p) => p.text)
        .join("\n\n"),
    );
    expect(documentText(document!)).not.toMatch(/Passage|Document/);
  });
});

describe("mapping a document's hits to passages", () => {
  const [document] = groupPassages(PASSAGES.slice(0, 10));
  const pairs = document!.passages.map((p) => wordPairs(p.text));

  it("reads the passage a section names, and nothing from a section that names none", () => {
    expect(headingNumber("Passage 7")).toBe(7);
    expect(passageBySection("Document 1 > Passage 7", 10)).toBe(6);
    expect(passageBySection("Passage 11", 10)).toBeNull();
    expect(passageBySection("Document 1", 10)).toBeNull();
    expect(passageBySection("", 10)).toBeNull();
  });

  it("maps a chunk to the passages it holds half of, in document order, through a PDF's ligatures and breaks", () => {
    const [p2, p3, p4] = [2, 3, 4].map((i) => document!.passages[i]!.text);
    expect(passagesByOverlap(`${p2} ${p3}`, pairs)).toEqual([2, 3]);
    // The tail of passage 3 and the whole of passage 4, as a chunk cut inside passage 3 holds them.
    const tail = p3!.split(" ").slice(-4).join(" ");
    expect(passagesByOverlap(`${tail} ${p4}`, pairs)).toEqual([4]);
    // Extracted from a PDF: a line break inside a word pair, upper case, the "fi" ligature of another text.
    expect(passagesByOverlap(p2!.toUpperCase().replace(" ", "\n"), pairs)).toEqual([2]);
    expect(wordPairs("ﬁeld notes")).toEqual(wordPairs("field notes"));
  });

  it("falls back to the passage sharing the most, and to none when nothing is shared", () => {
    const p5 = document!.passages[5]!.text.split(" ");
    expect(passagesByOverlap(p5.slice(0, 5).join(" "), pairs)).toEqual([5]);
    expect(passagesByOverlap("nothing of this appears anywhere", pairs)).toEqual([]);
  });

  it("ranks passages by section first, overlap where the section names none, each once", () => {
    const documents = new Map([["doc-1", document!]]);
    const ranker = passageRanker(documents, "section");
    const text = (i: number) => document!.passages[i]!.text;
    const ranked = ranker.rank([
      { content: text(7), document: { document_id: "doc-1", section: "Document 1 > Passage 8" } },
      { content: `${text(1)} ${text(2)}`, document: { document_id: "doc-1", section: "Document 1" } },
      { content: text(7), document: { document_id: "doc-1", section: "Document 1 > Passage 8" } },
      { content: "a memory of no document", document: null },
    ]);
    expect(ranked).toEqual(["p7", "p1", "p2"]);
    expect(ranker.counts).toEqual({ hits: 4, bySection: 2, byOverlap: 1, unmapped: 1, agree: 2 });
    const byOverlap = passageRanker(documents, "overlap");
    expect(
      byOverlap.rank([{ content: text(3), document: { document_id: "doc-1", section: "Document 1 > Passage 9" } }]),
    ).toEqual(["p3"]);
  });
});

describe("scores and the target line", () => {
  const qrels = new Map([
    [
      "q1",
      new Map([
        ["p1", 2],
        ["p2", 1],
        ["p9", 0],
      ]),
    ],
    ["q2", new Map([["p3", 1]])],
  ]);

  it("scores nDCG@10 and R@10 per passage, graded as the msmarco suite grades", () => {
    expect(
      scoreRankings(
        new Map([
          ["q1", ["p1", "p2"]],
          ["q2", ["p3"]],
        ]),
        qrels,
      ),
    ).toEqual({ ndcg: 1, recall: 1 });
    const swapped = scoreRankings(
      new Map([
        ["q1", ["p2", "p1"]],
        ["q2", ["p8"]],
      ]),
      qrels,
    );
    expect(swapped.recall).toBe(0.5);
    const ideal = 3 + 1 / Math.log2(3);
    expect(swapped.ndcg).toBeCloseTo((1 + 3 / Math.log2(3)) / ideal / 2, 10);
  });

  it("says met only when (b) is within 0.05 of (a) and not below (c)", () => {
    const s = (ndcg: number) => ({ ndcg, recall: 0 });
    expect(targetLine(s(0.65), s(0.62), s(0.6))).toContain(
      ": met ((b) - (a) = -0.030, within 0.05; (b) - (c) = +0.020)",
    );
    expect(targetLine(s(0.65), s(0.59), s(0.5))).toContain("not met ((b) - (a) = -0.060, not within 0.05;");
    expect(targetLine(s(0.65), s(0.64), s(0.66))).toContain(
      "not met ((b) - (a) = -0.010, within 0.05; (b) - (c) = -0.020)",
    );
    expect(targetLine(s(0.5), s(0.5), s(0.5))).toContain(": met ((b) - (a) = +0.000");
  });
});
