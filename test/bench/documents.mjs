// `npm run bench -- documents` (issue 62): what documents cost and how well they are found. Reads the MS MARCO
// sample from ../shared/data (data.mjs); the tests never do.
// 1. Per page: real files (PDFs of 1, 5 and 20 pages printed by Chromium, a Word file and a web page holding the
//    5-page PDF's text) through POST /documents: the request's time, the worker's CPU (V8 samples), and the D1 rows and
//    R2 operations as the worker recorded them in its usage log, read from the bench server's local D1 as the cost
//    bench reads them (documents-cost.mjs). With it the cost line of a 20-page PDF, which issue 62 gives the cost
//    bench: it is here because only this suite makes real PDFs (docs/costs.md).
// 2. Retrieval: the sample's passages stored (a) one by one (memory_batch_store), (b) as PDFs of 10 consecutive
//    passages, each passage a section under its own heading ("Passage k", which names no content), through
//    memory_ingest_document, (c) as the same documents in plain text (no headings); each way in a fresh tenant. The
//    sample's queries go through the `search` tool (limit 10) and are scored per passage: a passage's hit is that
//    passage; a document's hit (a chunk) maps to the passage its section names (a chunk never spans two sections), or,
//    where the section names none and for (c), to the passages of its document whose word pairs it holds at least
//    half of (else the one it shares most with) in document order (documents-scoring.mjs). nDCG@10 and R@10 of each,
//    and issue 62's target: (b) within 0.05 nDCG@10 of (a), and (b) >= (c).
// DOCUMENTS_PASSAGES takes the first N passages only, for a quick try (not comparable); DOCUMENTS_RUNS (3) the runs
// of each file.
import { loadMsmarco } from "./data.mjs";
import { groupPassages } from "./documents-corpus.mjs";
import { measureFiles, perPageLines, twentyPageLine } from "./documents-cost.mjs";
import { PASSAGES_PER_PAGE, perPageFiles } from "./documents-files.mjs";
import { measureRetrieval } from "./documents-retrieval.mjs";
import { targetLine } from "./documents-scoring.mjs";

export async function runDocuments(newTenant) {
  const { corpus, queries, qrels } = loadMsmarco();
  const passages = corpus.slice(0, Number(process.env.DOCUMENTS_PASSAGES ?? corpus.length));

  // The per-page files hold the sample's first passages, PASSAGES_PER_PAGE to a page.
  const [one, five, twenty] = [1, 5, 20].map((pages) => ({
    title: `Sample report of ${pages} page${pages === 1 ? "" : "s"}`,
    passages: corpus.slice(0, pages * PASSAGES_PER_PAGE),
  }));
  const measured = await measureFiles(newTenant, await perPageFiles(one, five, twenty));

  const retrieval = await measureRetrieval(newTenant, { corpus: passages, queries, qrels });
  const { a, b, c } = retrieval.scores.hybrid;
  return [
    ...perPageLines(measured),
    ...twentyPageLine(measured),
    "",
    ...retrieval.lines,
    targetLine(a, b, c),
    ...(passages.length < corpus.length
      ? [`  (DOCUMENTS_PASSAGES=${passages.length}: ${groupPassages(passages).length} documents, not the whole sample)`]
      : []),
  ];
}
