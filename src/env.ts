import type { JobMessage, UsageMessage } from "./messages";

/** Bindings and vars declared in wrangler.toml, plus secrets from `.dev.vars` / `wrangler secret put`. */
export interface Env {
  /** Tenants, keys, the shard map, job failures (src/control/). */
  CONTROL: D1Database;
  /** Data shards: every D1 binding named SHARD_<name> (src/control/shards.ts). */
  [shard: `SHARD_${string}`]: D1Database | undefined;
  CACHE: KVNamespace;
  /** OAuth clients, grants, codes and tokens (@cloudflare/workers-oauth-provider reads this binding name). */
  OAUTH_KV: KVNamespace;
  JOBS: Queue<JobMessage>;
  /** More job queues past one queue's 5,000 messages a second (src/adapters/queue-producer.ts). */
  [jobs: `JOBS_${string}`]: Queue<JobMessage> | undefined;
  /** Tool calls on their way to the usage log (src/jobs/usage-consumer.ts). */
  USAGE: Queue<UsageMessage>;
  /** More usage queues past one queue's 5,000 messages a second (src/adapters/usage-queue.ts). */
  [usage: `USAGE_${string}`]: Queue<UsageMessage> | undefined;
  RATE_LIMITER: RateLimit;
  /** Tool calls per tenant across its keys (src/auth/middleware.ts); absent in older deployments, which then skip it. */
  TENANT_RATE_LIMITER?: RateLimit;
  /** The first Vectorize index; more are bindings named VECTORIZE_<name>, found at run time (src/control/vector-indexes.ts). */
  VECTORIZE: Vectorize;
  [vectorIndex: `VECTORIZE_${string}`]: Vectorize | undefined;
  AI: Ai;
  /** Documents' originals (docs/documents.md); miniflare's R2 locally. */
  DOCUMENTS: R2Bucket;
  /** Static assets: the tokenizer's prebuilt rank tables (assets/tokenizer). */
  ASSETS: Fetcher;

  ADMIN_TOKEN?: string;
  /** Injected failures for tests and local runs (src/adapters/faults.ts); unset in production. */
  FAULTS?: string;
  /** D1 queries one invocation may run: 1000 (Workers Paid, default) or 50 (Free). */
  D1_QUERIES_PER_INVOCATION?: string;
  /** How long the usage log holds a call before writing it, in ms: at most (and by default) 20,000 (usage-buffer.ts). */
  FLUSH_USAGE_MS?: string;
  EMBEDDER?: string;
  EMBEDDING_MODEL?: string;
  EMBEDDING_DIMENSIONS?: string;
  OPENAI_BASE_URL?: string;
  OPENAI_API_KEY?: string;
  VECTOR_INDEX?: string;
  HYBRID_VECTOR_WEIGHT?: string;
  SEARCH_STAGES?: string;
  EMBEDDING_CHANCE_SIMILARITY?: string;
  SUMMARIZER?: string;
  JOB_DISPATCH?: string;
  SUMMARY_MODEL?: string;
  RERANK_MODEL?: string;
  /** Memory extraction's model (docs/extraction.md): workers-ai | openai | local | off. */
  LLM?: string;
  LLM_MODEL?: string;
  LLM_BASE_URL?: string;
  /** Most tokens an extraction answer may take (docs/extraction.md). */
  LLM_MAX_OUTPUT_TOKENS?: string;
  /** A secret: the OpenAI-compatible endpoint's key. */
  LLM_API_KEY?: string;
  /** Whether a project extracts memories when it has no setting of its own (default true). */
  EXTRACT_BY_DEFAULT?: string;
  EXTRACTION_WINDOW_TOKENS?: string;
  /** A tenant's daily model budget in neurons (a quota: the admin API overrides it per tenant). */
  TENANT_EXTRACTION_NEURONS_PER_DAY?: string;
  RERANK_CANDIDATES?: string;
  MESSAGE_LIMIT_THRESHOLD?: string;
  TOKEN_LIMIT_PERCENTAGE?: string;
  MODEL_TOKEN_LIMIT?: string;
  AUTO_SUMMARIZE?: string;
  SUMMARY_TOKEN_LIMIT?: string;
  SIMILARITY_THRESHOLD?: string;
  DOCUMENT_SIMILARITY_THRESHOLD?: string;
  USE_VECTOR_DB?: string;
  USE_GRAPH_DB?: string;
  CONTEXT_TOKEN_LIMIT?: string;
  ALLOWED_ORIGINS?: string;
  MAX_BODY_BYTES?: string;
  TOKEN_ENCODING?: string;
  LLM_MEMORY_CACHE_ENABLED?: string;
  LLM_MEMORY_CACHE_MAX_SIZE?: string;
  LLM_MEMORY_CACHE_TTL_SECONDS?: string;
  LLM_MEMORY_CACHE_SIMILARITY_THRESHOLD?: string;
  LLM_MEMORY_TOKEN_COUNTER_MODEL?: string;
  LLM_MEMORY_TOKEN_BUFFER_RATIO?: string;
  LLM_MEMORY_GRAPH_MAX_DEPTH?: string;
  LLM_MEMORY_GRAPH_MAX_RESULTS?: string;
  /** Documents (docs/documents.md): the converter, limits, and the hosts a URL may name though they resolve privately. */
  DOCUMENT_CONVERTER?: string;
  DOCUMENT_MAX_BYTES?: string;
  DOCUMENT_MAX_PAGES?: string;
  DOCUMENT_QUEUE_BYTES?: string;
  DOCUMENT_FETCH_TIMEOUT_MS?: string;
  DOCUMENT_FETCH_ALLOW_HOSTS?: string;
  /** Tenant quotas' defaults (src/config.ts, docs/configuration.md). */
  TENANT_MAX_ITEMS?: string;
  TENANT_MAX_BYTES?: string;
  TENANT_MAX_PENDING_JOBS?: string;
  /** TENANT_RATE_LIMITER's limit in wrangler.toml (the Worker cannot read a binding's settings). */
  TENANT_CALLS_PER_MINUTE?: string;
}
