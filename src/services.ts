import { LocalEmbedder } from "./adapters/local-embedder";
import { LocalVectorIndex } from "./adapters/local-vector-index";
import { OpenAiCompatibleEmbedder } from "./adapters/openai-embedder";
import { jobQueues, QueueProducer } from "./adapters/queue-producer";
import { QueueUsageLog, usageQueues } from "./adapters/usage-queue";
import { assetTokenTables } from "./adapters/asset-token-tables";
import { VectorizeVectorIndex } from "./adapters/vectorize-index";
import { WorkersAiEmbedder } from "./adapters/workers-ai-embedder";
import { checkEmbeddingSettings, EMBEDDING_MODELS, FEWEST_TEXTS, fittingInputs } from "./adapters/embedding-models";
import { WorkersAiReranker } from "./adapters/workers-ai-reranker";
import { readConfig, type Config } from "./config";
import { parseFaults, withFault } from "./adapters/faults";
import { tokenCounter } from "./core/shared/tokens";
import type { Env } from "./env";
import { WorkersAiSummarizer } from "./adapters/workers-ai-summarizer";
import { truncateToTokens } from "./core/shared/extractive";
import { ExtractiveSummarizer } from "./core/conversations/extractive-summarizer";
import type { Embedder, Services, VectorIndex } from "./ports";
import { tenantShards, tenantVectorIndex } from "./control/routing";
import { vectorIndexBinding } from "./control/vector-indexes";

/**
 * The adapters for work on one data shard: the local vector index and Vectorize's record of written ids
 * live in the shard that holds the tenant (`shard`, chosen by the caller from the control database). Vectorize
 * is found per tenant (its index, from the routing cache: control/vector-indexes.ts).
 */
export function buildServices(env: Env, shard: D1Database, waitUntil: (promise: Promise<unknown>) => void): Services {
  const config = readConfig(env);
  const tokens = () => tokenCounter(config.tokenEncoding, assetTokenTables(env.ASSETS));
  // FAULTS (adapters/faults.ts): injected failures, for tests and `npm run dev`; none unless configured.
  const faults = parseFaults(env.FAULTS);
  return {
    config,
    embedder: withFault(buildEmbedder(env, config), "embedder", faults),
    vectors: withFault(buildVectorIndex(env, config, shard), "vectors", faults),
    jobs: new QueueProducer(jobQueues(env).map((queue) => withFault(queue, "queue", faults))),
    usage: new QueueUsageLog(usageQueues(env)),
    ...(config.rerank ? { reranker: new WorkersAiReranker(env.AI, config.rerank.model) } : {}),
    cache: withFault(env.CACHE, "kv", faults),
    tokens,
    summarizer: async () => {
      const counter = await tokens();
      const extractive = new ExtractiveSummarizer(counter);
      if (config.summarizer === "extractive") return extractive;
      return new WorkersAiSummarizer(env.AI, config.summaryModel, extractive, (text, limit) => truncateToTokens(text, limit, counter)?.content ?? "");
    },
    // Work after the response (counters, cache writes) may fail like any call; it is logged, never an unhandled rejection.
    waitUntil: (promise) => waitUntil(promise.catch((error) => console.error("background work after the response failed", error))),
  };
}

/** Vectorize, each tenant's vectors in its own index (routing.ts caches which), or the local index in the shard. */
function buildVectorIndex(env: Env, config: Config, shard: D1Database): VectorIndex {
  if (config.vectorIndex === "local") return new LocalVectorIndex(shard, config.embeddingDimensions);
  const indexOf = async (tenantId: string) => vectorIndexBinding(env, await tenantVectorIndex(env.CONTROL, tenantId));
  // A page of ids to reconcile names many tenants: their indexes are read in one control query, cached with their shards.
  return new VectorizeVectorIndex(indexOf, config.embeddingDimensions, shard, (tenantIds) => tenantShards(env.CONTROL, tenantIds));
}

function buildEmbedder(env: Env, config: Config): Embedder {
  switch (config.embedder) {
    case "workers-ai":
      checkEmbeddingSettings(config.embeddingModel, config.embeddingDimensions);
      return new WorkersAiEmbedder(env.AI, config.embeddingModel, config.embeddingDimensions);
    case "openai":
      if (!env.OPENAI_BASE_URL) throw new Error("Configuration error: EMBEDDER=openai needs OPENAI_BASE_URL");
      return new OpenAiCompatibleEmbedder(env.OPENAI_BASE_URL, env.OPENAI_API_KEY, config.embeddingModel, config.embeddingDimensions);
    case "local":
      // Batches as the configured model would (EMBEDDING_MODEL's texts per call) and takes its texts cut as the Workers AI
      // adapter cuts them (its input tokens), refusing more of either, so local runs take production's path.
      return fittingInputs(new LocalEmbedder(config.embeddingDimensions, EMBEDDING_MODELS[config.embeddingModel]?.maxTexts ?? FEWEST_TEXTS, config.embeddingModel), config.embeddingModel);
  }
}
