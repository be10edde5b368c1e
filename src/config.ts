import type { Env } from "./env";
import { isTokenEncoding, type TokenEncoding } from "./token-encodings";

/** Typed view of wrangler.toml vars, with the documented defaults (docs/configuration.md). */
/** Whether new items are linked automatically: it takes both the vector and the graph stores (seed 003's switches). */
export function autoLinking(conversations: Pick<Config["conversations"], "useVectorDb" | "useGraphDb">): boolean {
  return conversations.useVectorDb && conversations.useGraphDb;
}

export interface Config {
  maxBodyBytes: number;
  allowedOrigins: string[];
  tokenEncoding: TokenEncoding;
  embedder: "workers-ai" | "openai" | "local";
  embeddingModel: string;
  embeddingDimensions: number;
  vectorIndex: "vectorize" | "local";
  /** Weight of the vector part in the fused search score (keyword part: 1); null = by embedder. */
  hybridVectorWeight: number | null;
  /** Cosine unrelated texts reach by chance with the embedder (search's vector part starts above it); null = by embedder. */
  embeddingChanceSimilarity: number | null;
  /** Seed 001's semantic cache settings (LLM_MEMORY_CACHE_*). */
  cache: { enabled: boolean; maxSize: number; ttlSeconds: number; similarityThreshold: number };
  /** Share of a token budget kept free (LLM_MEMORY_TOKEN_BUFFER_RATIO). */
  tokenBufferRatio: number;
  /** Deepest link traversal the server does (LLM_MEMORY_GRAPH_MAX_DEPTH); deeper requests are clamped. */
  graphMaxDepth: number;
  /** Most related memories one traversal adds (LLM_MEMORY_GRAPH_MAX_RESULTS). */
  graphMaxResults: number;
  /** Seed 003's conversation settings. */
  conversations: {
    /** New messages since the last summary that trigger auto-summarize (MESSAGE_LIMIT_THRESHOLD). */
    messageLimitThreshold: number;
    /** New tokens, as a percentage of MODEL_TOKEN_LIMIT, that trigger auto-summarize (TOKEN_LIMIT_PERCENTAGE). */
    tokenLimitPercentage: number;
    modelTokenLimit: number;
    autoSummarize: boolean;
    /** Largest summary, in tokens (a summary's tokenLimit). */
    summaryTokenLimit: number;
    /** Auto-link threshold between conversations (SIMILARITY_THRESHOLD). */
    similarityThreshold: number;
    /** Auto-link threshold between documents and memories. */
    documentSimilarityThreshold: number;
    useVectorDb: boolean;
    useGraphDb: boolean;
  };
  /** Seed 004's default context window for usage analysis (CONTEXT_TOKEN_LIMIT). */
  contextTokenLimit: number;
  summarizer: "extractive" | "workers-ai";
  summaryModel: string;
  /** Search's stages beyond the match itself (SEARCH_STAGES; default all): see src/core/search/search.ts. */
  searchStages: ReadonlySet<SearchStage>;
  /** Search's rerank stage (RERANK_MODEL, e.g. @cf/baai/bge-reranker-base): the best `candidates` fused hits are reordered; null = off. */
  rerank: { model: string; candidates: number } | null;
  /** The deployment's tenant quotas (TENANT_MAX_ITEMS, ...; src/core/tenants/quotas.ts); an operator overrides them per tenant. */
  quotas: QuotaDefaults;
  /** Memory extraction (docs/extraction.md). */
  extraction: ExtractionConfig;
  /** Document ingestion (docs/documents.md). */
  documents: DocumentsConfig;
  /**
   * When a write's background work is queued (JOB_DISPATCH): `per-minute`, the minute pass sends one job a tenant for
   * everything written since the last pass; `per-write`, each write sends its own at once (vectors within seconds).
   */
  jobDispatch: "per-minute" | "per-write";
}

export interface DocumentsConfig {
  /** DOCUMENT_CONVERTER: workers-ai (libraries first, toMarkdown for scans, images, spreadsheets) | local (libraries only). */
  converter: "workers-ai" | "local";
  /** Largest original, in bytes (DOCUMENT_MAX_BYTES, default 25 MB). */
  maxBytes: number;
  /** Most pages of a PDF (DOCUMENT_MAX_PAGES, default 100). */
  maxPages: number;
  /** A larger original converts in a queued job, the call answering `converting` (DOCUMENT_QUEUE_BYTES, default 2 MiB). */
  queueBytes: number;
  /** A URL's fetch, redirects included, must finish within this (DOCUMENT_FETCH_TIMEOUT_MS, default 15 s). */
  fetchTimeoutMs: number;
  /** Host names a URL may name though they resolve to a private address (DOCUMENT_FETCH_ALLOW_HOSTS; local development). */
  fetchAllowHosts: string[];
}

/** Documents' defaults (docs/documents.md "Limits"). */
export const DOCUMENT_DEFAULTS = {
  maxBytes: 25 * 1024 * 1024,
  maxPages: 100,
  queueBytes: 2 * 1024 * 1024,
  fetchTimeoutMs: 15_000,
} as const;

export interface ExtractionConfig {
  /** The model's provider (LLM); "off": no extraction in this deployment. */
  llm: "workers-ai" | "openai" | "local" | "off";
  /** LLM_MODEL, or the provider's default. */
  model: string;
  /** LLM_BASE_URL: the OpenAI-compatible endpoint (…/v1). */
  baseUrl: string | null;
  /** Whether a project without a setting of its own extracts (EXTRACT_BY_DEFAULT). */
  byDefault: boolean;
  /** A window's turns, in tokens of the deployment's encoding (EXTRACTION_WINDOW_TOKENS). */
  windowTokens: number;
  /** Turns before a window shown for context (the model may cite them; they are not the window's to extract). */
  overlapTurns: number;
  /** Most tokens an answer may take (LLM_MAX_OUTPUT_TOKENS; DEFAULT_MAX_OUTPUT_TOKENS by provider). */
  maxOutputTokens: number;
  /** A conversation's last, shorter window is extracted once no turn has come for this long. */
  idleSeconds: number;
}

/**
 * Most tokens an extraction answer may take, by provider (LLM_MAX_OUTPUT_TOKENS overrides): a window's 40 memories of
 * ~40 tokens with their JSON fit in 2,048; OpenAI-compatible endpoints often serve reasoning models, whose hidden
 * thinking counts against the same limit, so they get more. A cut answer splits its window, never loses it.
 */
const DEFAULT_MAX_OUTPUT_TOKENS = { "workers-ai": 2048, openai: 4096, local: 2048, off: 2048 } as const;

/**
 * The production extraction model: Workers AI's JSON mode is in its documented input schema, it answers without a
 * hidden reasoning pass (every output token is the answer), and its context holds any window (docs/extraction.md).
 */
export const DEFAULT_EXTRACTION_MODEL = "@cf/meta/llama-4-scout-17b-16e-instruct";

/** The tenant quotas, by the names the admin API and errors use (docs/limits.md "Tenant quotas"). */
export const QUOTA_NAMES = [
  "max_items",
  "max_bytes",
  "max_pending_jobs",
  "calls_per_minute",
  "extraction_neurons_per_day",
] as const;
export type QuotaName = (typeof QUOTA_NAMES)[number];
/** An operator's per-tenant overrides (CONTROL tenants.quotas): a limit, or "unlimited" to lift the quota for the tenant. */
export type QuotaOverrides = Partial<Record<QuotaName, number | "unlimited">>;

/** Defaults for every tenant; null = no limit. calls_per_minute is TENANT_RATE_LIMITER's limit: the default and the ceiling. */
export interface QuotaDefaults {
  max_items: number | null;
  max_bytes: number | null;
  max_pending_jobs: number | null;
  calls_per_minute: number;
  /** The tenant's daily model budget for extraction, in Workers AI neurons (UTC day). */
  extraction_neurons_per_day: number | null;
}

/**
 * Generous defaults: one tenant may hold ~10 % of a 10 GB shard (what an item costs in D1, its content stored
 * again in its chunk and keyword index: docs/scaling.md), queue one maximal import (50 MB, ~100k memories) for
 * embedding, and make 50 calls a second, about a quarter of what a shard serves (docs/scaling.md).
 */
export const DEFAULT_QUOTAS: QuotaDefaults = {
  max_items: 1_000_000,
  max_bytes: 1_000_000_000,
  max_pending_jobs: 100_000,
  calls_per_minute: 3_000,
  extraction_neurons_per_day: 50_000,
};

/**
 * The production embedder: of Workers AI's embedding models the best at retrieval (MTEB English v2
 * retrieval average, as the model table in adapters/embedding-models.ts gives it), multilingual
 * (bge-base is English only), 8,192 input tokens (bge's 512 can cut a 350-token chunk with its context),
 * and Matryoshka: cut to 768 dimensions it costs Vectorize what bge-base does. See adapters/embedding-models.ts.
 */
export const DEFAULT_EMBEDDING_MODEL = "@cf/qwen/qwen3-embedding-0.6b";
export const DEFAULT_EMBEDDING_DIMENSIONS = 768;

/** What search weighs besides a hit's own match (docs/tools.md "Memory, search and limits"). */
export const SEARCH_STAGES = ["time", "speaker", "when", "proximity", "feedback", "neighbours", "links"] as const;
export type SearchStage = (typeof SEARCH_STAGES)[number];

/** KV refuses TTLs under 60 seconds. */
export const KV_MIN_TTL_SECONDS = 60;

export function readConfig(env: Env): Config {
  let config = parsed.get(env);
  if (!config) parsed.set(env, (config = parseConfig(env)));
  return config;
}

/** Each env object's configuration, parsed once: a request reads it in the middleware, the routes and the services. */
const parsed = new WeakMap<Env, Config>();

function parseConfig(env: Env): Config {
  const encoding = env.TOKEN_ENCODING || encodingForModel(env.LLM_MEMORY_TOKEN_COUNTER_MODEL) || "o200k_base";
  if (!isTokenEncoding(encoding))
    throw new Error(`Configuration error: TOKEN_ENCODING '${encoding}' is not one of o200k_base, cl100k_base`);
  return {
    maxBodyBytes: positiveInt(env.MAX_BODY_BYTES, 1_048_576),
    allowedOrigins: (env.ALLOWED_ORIGINS ?? "")
      .split(",")
      .map((s) => s.trim())
      .filter(Boolean),
    tokenEncoding: encoding,
    embedder: oneOf(env.EMBEDDER, ["workers-ai", "openai", "local"] as const, "EMBEDDER"),
    embeddingModel: env.EMBEDDING_MODEL || DEFAULT_EMBEDDING_MODEL,
    embeddingDimensions: positiveInt(env.EMBEDDING_DIMENSIONS, DEFAULT_EMBEDDING_DIMENSIONS),
    vectorIndex: oneOf(env.VECTOR_INDEX, ["vectorize", "local"] as const, "VECTOR_INDEX"),
    hybridVectorWeight: env.HYBRID_VECTOR_WEIGHT ? nonNegative(env.HYBRID_VECTOR_WEIGHT, "HYBRID_VECTOR_WEIGHT") : null,
    embeddingChanceSimilarity: env.EMBEDDING_CHANCE_SIMILARITY ? chance(env.EMBEDDING_CHANCE_SIMILARITY) : null,
    cache: {
      enabled: bool(env.LLM_MEMORY_CACHE_ENABLED, true),
      maxSize: positiveInt(env.LLM_MEMORY_CACHE_MAX_SIZE, 1000),
      ttlSeconds: Math.max(KV_MIN_TTL_SECONDS, positiveInt(env.LLM_MEMORY_CACHE_TTL_SECONDS, 3600)),
      similarityThreshold: ratio(
        env.LLM_MEMORY_CACHE_SIMILARITY_THRESHOLD,
        0.95,
        "LLM_MEMORY_CACHE_SIMILARITY_THRESHOLD",
      ),
    },
    tokenBufferRatio: ratio(env.LLM_MEMORY_TOKEN_BUFFER_RATIO, 0.1, "LLM_MEMORY_TOKEN_BUFFER_RATIO"),
    graphMaxDepth: Math.min(5, positiveInt(env.LLM_MEMORY_GRAPH_MAX_DEPTH, 3)),
    graphMaxResults: positiveInt(env.LLM_MEMORY_GRAPH_MAX_RESULTS, 50),
    conversations: {
      messageLimitThreshold: positiveInt(env.MESSAGE_LIMIT_THRESHOLD, 5),
      tokenLimitPercentage: Math.min(100, positiveInt(env.TOKEN_LIMIT_PERCENTAGE, 80)),
      modelTokenLimit: positiveInt(env.MODEL_TOKEN_LIMIT, 8192),
      autoSummarize: bool(env.AUTO_SUMMARIZE, true),
      summaryTokenLimit: positiveInt(env.SUMMARY_TOKEN_LIMIT, 512),
      similarityThreshold: ratio(env.SIMILARITY_THRESHOLD, 0.6, "SIMILARITY_THRESHOLD"),
      documentSimilarityThreshold: ratio(env.DOCUMENT_SIMILARITY_THRESHOLD, 0.8, "DOCUMENT_SIMILARITY_THRESHOLD"),
      useVectorDb: bool(env.USE_VECTOR_DB, true),
      useGraphDb: bool(env.USE_GRAPH_DB, true),
    },
    contextTokenLimit: positiveInt(env.CONTEXT_TOKEN_LIMIT, 1_000_000),
    summarizer: oneOf(env.SUMMARIZER, ["extractive", "workers-ai"] as const, "SUMMARIZER"),
    summaryModel: env.SUMMARY_MODEL || "@cf/meta/llama-3.1-8b-instruct",
    searchStages: searchStages(env.SEARCH_STAGES),
    rerank: env.RERANK_MODEL
      ? { model: env.RERANK_MODEL, candidates: Math.min(100, positiveInt(env.RERANK_CANDIDATES, 20)) }
      : null,
    quotas: {
      max_items: quota(env.TENANT_MAX_ITEMS, DEFAULT_QUOTAS.max_items, "TENANT_MAX_ITEMS"),
      max_bytes: quota(env.TENANT_MAX_BYTES, DEFAULT_QUOTAS.max_bytes, "TENANT_MAX_BYTES"),
      max_pending_jobs: quota(env.TENANT_MAX_PENDING_JOBS, DEFAULT_QUOTAS.max_pending_jobs, "TENANT_MAX_PENDING_JOBS"),
      // The binding's limit can only be read from wrangler.toml, so the Worker is told it; per-tenant limits are charged against it.
      calls_per_minute: quota(
        env.TENANT_CALLS_PER_MINUTE,
        DEFAULT_QUOTAS.calls_per_minute,
        "TENANT_CALLS_PER_MINUTE",
        false,
      )!,
      extraction_neurons_per_day: quota(
        env.TENANT_EXTRACTION_NEURONS_PER_DAY,
        DEFAULT_QUOTAS.extraction_neurons_per_day,
        "TENANT_EXTRACTION_NEURONS_PER_DAY",
      ),
    },
    documents: {
      converter: oneOf(env.DOCUMENT_CONVERTER, ["workers-ai", "local"] as const, "DOCUMENT_CONVERTER"),
      maxBytes: positiveInt(env.DOCUMENT_MAX_BYTES, DOCUMENT_DEFAULTS.maxBytes),
      maxPages: positiveInt(env.DOCUMENT_MAX_PAGES, DOCUMENT_DEFAULTS.maxPages),
      queueBytes: positiveInt(env.DOCUMENT_QUEUE_BYTES, DOCUMENT_DEFAULTS.queueBytes),
      fetchTimeoutMs: positiveInt(env.DOCUMENT_FETCH_TIMEOUT_MS, DOCUMENT_DEFAULTS.fetchTimeoutMs),
      fetchAllowHosts: (env.DOCUMENT_FETCH_ALLOW_HOSTS ?? "")
        .split(",")
        .map((h) => h.trim().toLowerCase())
        .filter(Boolean),
    },
    extraction: extractionConfig(env),
    jobDispatch: oneOf(env.JOB_DISPATCH, ["per-minute", "per-write"] as const, "JOB_DISPATCH"),
  };
}

function extractionConfig(env: Env): ExtractionConfig {
  const llm = oneOf(env.LLM, ["off", "workers-ai", "openai", "local"] as const, "LLM");
  if (llm === "openai" && !env.LLM_BASE_URL)
    throw new Error("Configuration error: LLM=openai needs LLM_BASE_URL (e.g. http://localhost:11434/v1)");
  if (llm === "openai" && !env.LLM_MODEL) throw new Error("Configuration error: LLM=openai needs LLM_MODEL");
  return {
    llm,
    model: env.LLM_MODEL || (llm === "local" ? "local-rules" : DEFAULT_EXTRACTION_MODEL),
    baseUrl: env.LLM_BASE_URL?.replace(/\/+$/, "") || null,
    byDefault: bool(env.EXTRACT_BY_DEFAULT, true),
    windowTokens: Math.max(200, positiveInt(env.EXTRACTION_WINDOW_TOKENS, 1200)),
    overlapTurns: 2,
    maxOutputTokens: positiveInt(env.LLM_MAX_OUTPUT_TOKENS, DEFAULT_MAX_OUTPUT_TOKENS[llm]),
    idleSeconds: 60,
  };
}

/** A quota's default: unset, empty or 0 = the built-in default; "unlimited" = none (when allowed); else a whole number. */
function quota(value: string | undefined, fallback: number | null, name: string, mayBeUnlimited = true): number | null {
  const v = value?.trim() ?? "";
  if (v === "" || v === "0") return fallback;
  if (mayBeUnlimited && v.toLowerCase() === "unlimited") return null;
  const n = Number(v);
  if (!Number.isSafeInteger(n) || n < 0) {
    throw new Error(
      `Configuration error: ${name} '${value}' is not a whole number ≥ 0 (0 = the default${mayBeUnlimited ? ', "unlimited" = no limit' : ""})`,
    );
  }
  return n;
}

function oneOf<T extends string>(value: string | undefined, allowed: readonly T[], name: string): T {
  const v = value || allowed[0]!;
  if (!(allowed as readonly string[]).includes(v))
    throw new Error(`Configuration error: ${name} '${v}' is not one of ${allowed.join(", ")}`);
  return v as T;
}

/** A comma-separated list of stages ("" = none); unset = all. */
function searchStages(value: string | undefined): ReadonlySet<SearchStage> {
  if (value === undefined) return new Set(SEARCH_STAGES);
  const names = value
    .split(",")
    .map((s) => s.trim())
    .filter(Boolean);
  for (const name of names) {
    if (!(SEARCH_STAGES as readonly string[]).includes(name))
      throw new Error(`Configuration error: SEARCH_STAGES names '${name}'; the stages are ${SEARCH_STAGES.join(", ")}`);
  }
  return new Set(names as SearchStage[]);
}

function positiveInt(value: string | undefined, fallback: number): number {
  const n = Number(value);
  return Number.isInteger(n) && n > 0 ? n : fallback;
}

function bool(value: string | undefined, fallback: boolean): boolean {
  if (value === undefined || value === "") return fallback;
  return !["false", "0", "no", "off"].includes(value.toLowerCase());
}

function ratio(value: string | undefined, fallback: number, name: string): number {
  if (value === undefined || value === "") return fallback;
  const n = Number(value);
  if (!Number.isFinite(n) || n < 0 || n >= 1.000001)
    throw new Error(`Configuration error: ${name} '${value}' is not between 0 and 1`);
  return n;
}

function chance(value: string): number {
  const n = Number(value);
  if (!Number.isFinite(n) || n < 0 || n >= 1)
    throw new Error(`Configuration error: EMBEDDING_CHANCE_SIMILARITY '${value}' is not a number in [0, 1)`);
  return n;
}

function nonNegative(value: string, name: string): number {
  const n = Number(value);
  if (!Number.isFinite(n) || n < 0) throw new Error(`Configuration error: ${name} '${value}' is not a number ≥ 0`);
  return n;
}

/** Seed 001 names a model (LLM_MEMORY_TOKEN_COUNTER_MODEL); TOKEN_ENCODING, when set, takes precedence. */
function encodingForModel(model: string | undefined): string | undefined {
  if (!model) return undefined;
  if (isTokenEncoding(model)) return model;
  return /^(gpt-4o|gpt-4\.1|gpt-4\.5|gpt-5|o\d)/.test(model)
    ? "o200k_base"
    : /^(gpt-4|gpt-3\.5|text-embedding)/.test(model)
      ? "cl100k_base"
      : undefined;
}
