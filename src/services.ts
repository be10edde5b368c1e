import { assetTokenTables } from "./adapters/asset-token-tables";
import { BufferedUsageLog } from "./adapters/buffered-usage-log";
import { checkEmbeddingSettings, EMBEDDING_MODELS, FEWEST_TEXTS, fittingInputs } from "./adapters/embedding-models";
import { parseFaults, withFault } from "./adapters/faults";
import { LibraryConverter } from "./adapters/library-converter";
import { LocalEmbedder } from "./adapters/local-embedder";
import { LocalVectorIndex } from "./adapters/local-vector-index";
import { meteredAi, meteredKv, meteredQueue, meteredR2 } from "./adapters/metered-bindings";
import { OpenAiCompatibleEmbedder } from "./adapters/openai-embedder";
import { OpenAiJsonModel } from "./adapters/openai-json-model";
import { jobQueues, QueueProducer } from "./adapters/queue-producer";
import { VectorizeVectorIndex } from "./adapters/vectorize-index";
import { WorkersAiConverter } from "./adapters/workers-ai-converter";
import { WorkersAiEmbedder } from "./adapters/workers-ai-embedder";
import { WorkersAiJsonModel } from "./adapters/workers-ai-json-model";
import { WorkersAiReranker } from "./adapters/workers-ai-reranker";
import { WorkersAiSummarizer } from "./adapters/workers-ai-summarizer";
import { UnitMeter } from "./billable-units";
import { type Config, readConfig } from "./config";
import { vectorIndexBinding } from "./control/vector-indexes";
import { ExtractiveSummarizer } from "./core/conversations/extractive-summarizer";
import { LocalRulesModel } from "./core/extraction/local-rules";
import { meteredD1 } from "./db/metered-d1";
import type { Env } from "./env";
import type { Embedder, JsonModel, Services, VectorIndex } from "./ports";
import { truncateToTokens } from "./shared/extractive";
import { tokenCounter } from "./shared/tokens";

/**
 * The adapters for work on one data shard (`shard`, chosen by the caller from the control database), over the vector
 * index the caller gives: src/open-tenant.ts picks it from the tenant's route, or a locator for shard-wide work.
 * Every billed binding charges the units it spends to `meter` (billable-units.ts).
 */
export function buildServices(
  env: Env,
  shard: D1Database,
  vectors: VectorIndexChoice,
  waitUntil: (promise: Promise<unknown>) => void,
  meter = new UnitMeter(),
): Services {
  const config = readConfig(env);
  const ai = meteredAi(env.AI, meter);
  const tokens = () => tokenCounter(config.tokenEncoding, assetTokenTables(env.ASSETS));
  // FAULTS (adapters/faults.ts): injected failures, for tests and `npm run dev`; none unless configured.
  const faults = parseFaults(env.FAULTS);
  return {
    config,
    meter,
    embedder: withFault(buildEmbedder(ai, env, config), "embedder", faults),
    vectors: withFault(buildVectorIndex(env, config, shard, vectors, meter), "vectors", faults),
    // Metered inside the fault: metering replaces the env's own metering of the binding, and the fault stays outside.
    jobs: new QueueProducer(jobQueues(env).map((queue) => withFault(meteredQueue(queue, meter), "queue", faults))),
    usage: new BufferedUsageLog(env, waitUntil),
    ...(config.rerank ? { reranker: new WorkersAiReranker(ai, config.rerank.model) } : {}),
    cache: withFault(meteredKv(env.CACHE, meter), "kv", faults),
    tokens,
    summarizer: async () => {
      const counter = await tokens();
      const extractive = new ExtractiveSummarizer(counter);
      if (config.summarizer === "extractive") return extractive;
      return new WorkersAiSummarizer(
        ai,
        config.summaryModel,
        extractive,
        (text, limit) => truncateToTokens(text, limit, counter)?.content ?? "",
      );
    },
    model: buildJsonModel(ai, env, config),
    documents:
      config.documents.converter === "workers-ai"
        ? new WorkersAiConverter(ai, new LibraryConverter())
        : new LibraryConverter(),
    originals: meteredR2(env.DOCUMENTS, meter),
    // Work after the response (counters, cache writes) may fail like any call; it is logged, never an unhandled rejection.
    waitUntil: (promise) =>
      waitUntil(promise.catch((error) => console.error("background work after the response failed", error))),
  };
}

/**
 * Which Vectorize index serves: one tenant's (its route names the binding; null is VECTORIZE), or, for work over a
 * whole shard's tenants (reconciliation), a lookup of each tenant's index and of several at once.
 */
export type VectorIndexChoice =
  | { tenantIndex: string | null }
  | { locate: (tenantId: string) => Promise<Vectorize>; locateMany: (tenantIds: string[]) => Promise<unknown> };

/** Vectorize as the choice says, or the local index in the shard (its rows counted apart: production has none). */
function buildVectorIndex(
  env: Env,
  config: Config,
  shard: D1Database,
  choice: VectorIndexChoice,
  meter: UnitMeter,
): VectorIndex {
  if (config.vectorIndex === "local")
    return new LocalVectorIndex(meteredD1(shard, meter, "local"), config.embeddingDimensions, meteredD1(shard, meter));
  const d1 = meteredD1(shard, meter);
  if ("tenantIndex" in choice)
    return new VectorizeVectorIndex(
      async () => vectorIndexBinding(env, choice.tenantIndex),
      config.embeddingDimensions,
      d1,
    );
  return new VectorizeVectorIndex(choice.locate, config.embeddingDimensions, d1, choice.locateMany);
}

/** Memory extraction's model (LLM); null where the deployment extracts nothing. */
function buildJsonModel(ai: Ai, env: Env, config: Config): JsonModel | null {
  const { llm, model, baseUrl } = config.extraction;
  switch (llm) {
    case "off":
      return null;
    case "workers-ai":
      return new WorkersAiJsonModel(ai, model);
    case "openai":
      return new OpenAiJsonModel(baseUrl!, env.LLM_API_KEY, model);
    case "local":
      return new LocalRulesModel();
  }
}

function buildEmbedder(ai: Ai, env: Env, config: Config): Embedder {
  switch (config.embedder) {
    case "workers-ai":
      checkEmbeddingSettings(config.embeddingModel, config.embeddingDimensions);
      return new WorkersAiEmbedder(ai, config.embeddingModel, config.embeddingDimensions);
    case "openai":
      if (!env.OPENAI_BASE_URL) throw new Error("Configuration error: EMBEDDER=openai needs OPENAI_BASE_URL");
      return new OpenAiCompatibleEmbedder(
        env.OPENAI_BASE_URL,
        env.OPENAI_API_KEY,
        config.embeddingModel,
        config.embeddingDimensions,
      );
    case "local":
      // Batches as the configured model would (EMBEDDING_MODEL's texts per call) and takes its texts cut as the Workers AI
      // adapter cuts them (its input tokens), refusing more of either, so local runs take production's path.
      return fittingInputs(
        new LocalEmbedder(
          config.embeddingDimensions,
          EMBEDDING_MODELS[config.embeddingModel]?.maxTexts ?? FEWEST_TEXTS,
          config.embeddingModel,
        ),
        config.embeddingModel,
      );
  }
}
