// Retrieval over one corpus stored three ways (documents.mjs), each in a fresh tenant: (a) every passage a memory
// (memory_batch_store, as the msmarco suite stores them), (b) documents of PASSAGES_PER_DOCUMENT passages printed to
// PDF by Chromium and ingested with memory_ingest_document, (c) the same documents as plain text (text/plain, no
// headings). The sample's queries go through `search` (hybrid, limit 10; vector only beside it) and are scored per
// passage (documents-scoring.mjs).

import { settled } from "./cost.mjs";
import { documentHtml, documentText, groupPassages } from "./documents-corpus.mjs";
import { printPdfs } from "./documents-files.mjs";
import { passageRanker, scoreRankings } from "./documents-scoring.mjs";
import { localUsageUnits } from "./local-d1.mjs";
import { fmt, uniqueInOrder } from "./metrics.mjs";

/** Hybrid is what a client gets; vector only beside it shows the embeddings' part (the headings are in their text). */
const MODES = ["hybrid", "vector"];

/** {lines, scores: {a, b, c} by mode}: the three stores of `corpus`, searched with `queries`, scored with `qrels`. */
export async function measureRetrieval(newTenant, { corpus, queries, qrels }) {
  const documents = groupPassages(corpus);
  const printing = performance.now();
  const pdfs = await printPdfs(documents.map((d) => documentHtml(d)));
  const printSeconds = (performance.now() - printing) / 1000;

  const a = await storePassages(await newTenant("documents-a-passages"), corpus);
  const b = await storeDocuments(await newTenant("documents-b-pdf"), documents, (_d, i) => ({
    content_base64: Buffer.from(pdfs[i]).toString("base64"),
    mime_type: "application/pdf",
    file_name: `document-${i + 1}.pdf`,
  }));
  const c = await storeDocuments(await newTenant("documents-c-text"), documents, (d, i) => ({
    content: documentText(d),
    mime_type: "text/plain",
    title: d.title,
    file_name: `document-${i + 1}.txt`,
  }));

  const rankers = {
    a: () => ({ rank: (results) => uniqueInOrder(results.flatMap((r) => a.passageOf.get(r.item_id) ?? [])) }),
    b: () => passageRanker(b.documents, "section"),
    c: () => passageRanker(c.documents, "overlap"),
  };
  const scores = {};
  const counts = {};
  for (const mode of MODES) {
    scores[mode] = {};
    for (const [name, store] of Object.entries({ a, b, c })) {
      const ranker = rankers[name]();
      const rankings = new Map();
      let hits = 0;
      for (const q of queries) {
        const { result } = await store.tenant.call("search", { query: q.text, project: "bench", limit: 10, mode });
        rankings.set(q._id, ranker.rank(result.results));
        hits += result.results.length;
      }
      // Hits a search answered: search answers none under its relevance floor, so a vector list can be short.
      scores[mode][name] = { ...scoreRankings(rankings, qrels), hits: hits / queries.length };
      if (mode === "hybrid" && ranker.counts) counts[name] = ranker.counts;
    }
  }
  return { lines: retrievalLines({ corpus, documents, pdfs, printSeconds, a, b, c, scores, counts }), scores };
}

/** (a): the passages through memory_batch_store, 100 a call; item id -> passage ids (a repeated text is one item). */
async function storePassages(tenant, corpus) {
  const usage = localUsageUnits(tenant.id, ["d1_rows_written"]);
  const passageOf = new Map();
  const started = performance.now();
  for (let i = 0; i < corpus.length; i += 100) {
    const slice = corpus.slice(i, i + 100);
    const { result } = await tenant.call("memory_batch_store", {
      namespace: "bench",
      memories: slice.map((p) => ({ content: p.text, type: "document" })),
    });
    result.ids.forEach((id, j) => passageOf.set(id, [...(passageOf.get(id) ?? []), slice[j]._id]));
  }
  const ingestSeconds = (performance.now() - started) / 1000;
  return { tenant, passageOf, items: passageOf.size, ingestSeconds, ...(await settle(tenant, usage)) };
}

/** (b) and (c): each document through memory_ingest_document, one call each; document_id -> document. */
async function storeDocuments(tenant, documents, source) {
  const usage = localUsageUnits(tenant.id, ["d1_rows_written"]);
  const byId = new Map();
  const totals = { pages: 0, sections: 0, chunks: 0 };
  const started = performance.now();
  for (const [i, document] of documents.entries()) {
    const { result: answer } = await tenant.call("memory_ingest_document", {
      project_id: "bench",
      ...source(document, i),
    });
    byId.set(answer.document_id, document);
    totals.pages += answer.pages ?? 0;
    totals.sections += answer.sections;
    totals.chunks += answer.chunks;
  }
  const ingestSeconds = (performance.now() - started) / 1000;
  return { tenant, documents: byId, totals, ingestSeconds, ...(await settle(tenant, usage)) };
}

/**
 * Waits until the store's jobs and passes are done (cost.mjs's settled: embed, link, posting blocks, the usage log
 * still) before the next store and the searches: links are search evidence, and each store's time is its own.
 * Answers the seconds that took and the D1 rows its calls and jobs wrote (its own parts: the shards' passes are
 * shared).
 */
async function settle(tenant, usage) {
  const started = performance.now();
  const { parts } = await settled(tenant, usage);
  const own = Object.entries(parts).filter(
    ([key]) => key.startsWith("tool:") || (key.startsWith("job:") && key !== "job:admin"),
  );
  return {
    settleSeconds: (performance.now() - started) / 1000,
    rowsWritten: own.reduce((sum, [, p]) => sum + p.d1_rows_written, 0),
  };
}

function retrievalLines({ corpus, documents, pdfs, printSeconds, a, b, c, scores, counts }) {
  const pages = b.totals.pages;
  const kb = pdfs.reduce((s, p) => s + p.byteLength, 0) / 1024;
  const lines = [
    `Retrieval per passage: MS MARCO sample, ${corpus.length} passages in ${documents.length} documents of up to ${documents[0].passages.length}, stored three ways, hybrid search (limit 10)`,
    `  PDFs printed by Chromium: ${documents.length} (${pages} pages, ${fmt(kb / 1024, 1)} MB) in ${fmt(printSeconds, 0)} s`,
    `  (a) passages one by one: ${a.items} items, ${fmt(a.ingestSeconds, 0)} s (memory_batch_store, 100 a call), jobs settled ${fmt(a.settleSeconds, 0)} s after; ${fmt(a.rowsWritten / corpus.length, 1)} D1 rows written a passage`,
    `  (b) PDFs: ${b.totals.sections} sections, ${b.totals.chunks} chunks, ${fmt(b.ingestSeconds, 0)} s (memory_ingest_document, one a call), jobs settled ${fmt(b.settleSeconds, 0)} s after; ${fmt(b.rowsWritten / corpus.length, 1)} D1 rows written a passage`,
    `  (c) plain text: ${c.totals.sections} sections, ${c.totals.chunks} chunks, ${fmt(c.ingestSeconds, 0)} s, jobs settled ${fmt(c.settleSeconds, 0)} s after; ${fmt(c.rowsWritten / corpus.length, 1)} D1 rows written a passage`,
  ];
  for (const mode of MODES)
    for (const [name, label] of [
      ["a", "(a) passages one by one"],
      ["b", "(b) PDF documents"],
      ["c", "(c) plain-text documents"],
    ])
      lines.push(
        `  ${mode.padEnd(8)} ${label.padEnd(26)} nDCG@10 ${fmt(scores[mode][name].ndcg, 3)}  R@10 ${fmt(scores[mode][name].recall, 3)}  hits a search ${fmt(scores[mode][name].hits, 1)}`,
      );
  const hits = (n) => counts[n];
  lines.push(
    `  hits mapped (hybrid): (b) ${hits("b").bySection} of ${hits("b").hits} by their section, ${hits("b").agree} of those also by overlap, ${hits("b").byOverlap} by overlap alone, ${hits("b").unmapped} to none; ` +
      `(c) ${hits("c").byOverlap} of ${hits("c").hits} by overlap, ${hits("c").unmapped} to none`,
  );
  return lines;
}
