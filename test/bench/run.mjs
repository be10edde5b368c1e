#!/usr/bin/env node
// `npm run bench [-- suite ...]`: starts the worker with `wrangler dev` (offline, fresh state) and runs
// the suites through its public tools, printing figures. Not a timed test: nothing here passes or fails.
import { runCalls } from "./calls.mjs";
import { runCapacity } from "./capacity.mjs";
import { runChaos } from "./chaos.mjs";
import { runContext } from "./context.mjs";
import { runCost, runFill } from "./cost.mjs";
import { runDocuments } from "./documents.mjs";
import { runExtraction } from "./extraction.mjs";
import { runGc } from "./gc.mjs";
import { runGraph } from "./graph.mjs";
import { runGrowth } from "./growth.mjs";
import { runHeldout } from "./heldout.mjs";
import { runIngest } from "./ingest.mjs";
import { runLocomo, runStages } from "./locomo.mjs";
import { runMsmarco } from "./msmarco.mjs";
import { runOwnership } from "./ownership.mjs";
import { runQa } from "./qa.mjs";
import { runRealText } from "./real-text.mjs";
import { runScale } from "./scale.mjs";
import { runTokenizer } from "./tokenizer.mjs";
import { newTenant, startWorker } from "./worker.mjs";

const SUITES = {
  locomo: runLocomo,
  stages: runStages,
  heldout: runHeldout,
  msmarco: runMsmarco,
  scale: runScale,
  growth: runGrowth,
  context: runContext,
  graph: runGraph,
  gc: runGc,
  tokenizer: runTokenizer,
  ingest: runIngest,
  calls: runCalls,
  capacity: runCapacity,
  ownership: runOwnership,
  "real-text": runRealText,
  chaos: runChaos,
  extraction: runExtraction,
  qa: runQa,
  cost: runCost,
  documents: runDocuments,
  fill: runFill,
};
// `heldout` repeats locomo and msmarco (in one run, with the targets), so it runs only when named; `fill` only
// prepares a state for a replay.
const chosen =
  process.argv.slice(2).length > 0
    ? process.argv.slice(2)
    : Object.keys(SUITES).filter((name) => name !== "heldout" && name !== "fill");
for (const name of chosen)
  if (!SUITES[name]) throw new Error(`unknown suite '${name}' (have: ${Object.keys(SUITES).join(", ")})`);

let worker = await startWorker();
/** A fresh worker (new isolate, empty state) for suites that measure cold starts. */
const restart = async () => {
  await worker.stop();
  worker = await startWorker();
};
/** For a suite that runs servers of its own (chaos): the shared one stops, and starts afresh after the suite. */
let released = false;
const release = async () => {
  await worker.stop();
  released = true;
};
try {
  for (const name of chosen) {
    const started = performance.now();
    const lines = await SUITES[name](newTenant, { restart, release });
    if (released) {
      worker = await startWorker();
      released = false;
    }
    console.log(`\n${lines.join("\n")}\n  (${name}: ${((performance.now() - started) / 1000).toFixed(0)} s)`);
  }
} finally {
  await worker.stop();
}
