// The server the extraction and qa suites run against: the shared one is stopped and one with an extraction model
// started in its place (wrangler.toml says LLM=workers-ai, which a local run cannot reach), as the chaos suite
// does; run.mjs starts the shared one again afterwards.
import { extractionModelFromEnv, extractionVars } from "./llm-endpoint.mjs";
import { localExtractionProgress } from "./local-d1.mjs";
import { startOracleServer } from "./oracle-server.mjs";
import { admin, startWorker } from "./worker.mjs";

/**
 * Runs `measure({tenant, model, progress, settle, oracle})` on a fresh worker extracting with the environment's
 * model; with BENCH_LLM=oracle, the oracle over `samples` is served first and `oracle` is its record.
 */
export async function withExtractionWorker(newTenant, { release }, samples, measure) {
  const model = extractionModelFromEnv();
  const served = model.llm === "oracle" ? await startOracleServer(samples, model.oracle) : null;
  await release();
  const worker = await startWorker({
    vars: extractionVars(served ? { llm: "openai", baseUrl: served.url, model: served.model } : model),
  }).catch(async (error) => {
    await served?.stop();
    throw error;
  });
  try {
    const tenant = await newTenant("extraction");
    // Workers AI's neurons are the budgeted unit; lifted so that a long run never waits for the next day.
    await admin("PATCH", `/tenants/${tenant.id}`, { quotas: { extraction_neurons_per_day: "unlimited" } });
    // Derived memories are searched once embedded and linked, and the minute passes have merged the keyword index,
    // as the locomo suite waits.
    const settle = async () => (await tenant.settle()) + (await tenant.postingBlocks());
    const progress = localExtractionProgress(tenant.id);
    return await measure({ tenant, model, progress, settle, oracle: served?.oracle ?? null });
  } finally {
    await worker.stop();
    await served?.stop();
  }
}
