import type { UnitMeter } from "./billable-units";
import type { Config } from "./config";
import type { JobMessage, JobRunRecord, ToolCallRecord } from "./messages";
import type { DocumentBlock } from "./shared/document-blocks";
import type { TokenCounter } from "./shared/tokens";

/** Text -> unit vectors. Adapters: Workers AI, OpenAI-compatible HTTP, local deterministic. */
export interface Embedder {
  readonly name: string;
  readonly dimensions: number;
  /** False for the lexical local embedder: its vectors repeat what BM25 already knows. */
  readonly semantic: boolean;
  /** Most texts one call accepts; callers batch to it. */
  readonly maxBatch: number;
  /** A query and the documents it should find may be embedded differently (asymmetric retrieval models). */
  embed(texts: string[], purpose?: EmbeddingPurpose): Promise<Float32Array[]>;
}

export type EmbeddingPurpose = "query" | "document";

/** Scores how well each text answers the query (higher is better), in the texts' order. */
export interface Reranker {
  readonly name: string;
  rerank(query: string, texts: string[]): Promise<number[]>;
}

/** What the vector index keeps beside each chunk vector. Only `project` is used as a filter there. */
export interface VectorRecord {
  chunkId: number;
  itemId: string;
  project: string;
  kind: string;
  type: string;
  values: Float32Array;
}

export interface VectorMatch {
  chunkId: number;
  /** Cosine similarity, -1..1. */
  score: number;
}

/** Chunk vectors per tenant. Adapters: Vectorize (namespace per tenant), local (D1, exact cosine). */
export interface VectorIndex {
  readonly name: string;
  upsert(tenantId: string, records: VectorRecord[]): Promise<void>;
  query(
    tenantId: string,
    vector: Float32Array,
    options: { topK: number; projects?: readonly string[] },
  ): Promise<VectorMatch[]>;
  /**
   * Several queries with the same options (auto-linking a job's items); answers in the same order.
   * Matches under `minScore` are left out (an index may then search less: close neighbours are few).
   */
  queryMany(
    tenantId: string,
    vectors: Float32Array[],
    options: { topK: number; projects?: readonly string[]; minScore?: number },
  ): Promise<VectorMatch[][]>;
  /** Stored vectors by chunk id (missing ids are absent from the map). */
  getVectors(tenantId: string, chunkIds: number[]): Promise<Map<number, Float32Array>>;
  delete(tenantId: string, chunkIds: number[]): Promise<void>;
  /**
   * Chunk ids the index holds vectors for, ascending, after `afterChunkId`: one tenant's or every tenant's.
   * Reconciliation and tenant deletion walk it. Vectorize cannot list, so its adapter answers from a D1
   * record of the ids it wrote (vector_ids): ids that may exist there, not proof that they do.
   */
  listIds(options: { tenantId?: string; afterChunkId: number; limit: number }): Promise<StoredVectorId[]>;
}

export interface StoredVectorId {
  tenantId: string;
  chunkId: number;
}

/** Background work. Adapter: Cloudflare Queues (miniflare locally). */
export interface JobQueue {
  /** `delaySeconds`: when the jobs are delivered (at most Queues' 12 hours). */
  send(messages: JobMessage[], options?: { delaySeconds?: number }): Promise<void>;
}

/**
 * A text model that answers in JSON matching a schema: memory extraction's model (docs/extraction.md).
 * Adapters: Workers AI (JSON mode), any OpenAI-compatible endpoint, and an offline rule-based stand-in.
 */
export interface JsonModel {
  /** The model as recorded beside each call (e.g. @cf/meta/llama-4-scout-17b-16e-instruct). */
  readonly name: string;
  /** Throws ModelError (src/errors.ts) when no usable answer came back. */
  generate(request: JsonRequest): Promise<JsonAnswer>;
}

export interface JsonRequest {
  /** The instructions (the system message). */
  system: string;
  /** The input (the user message). */
  prompt: string;
  /** The JSON Schema the answer must match, and its name for the APIs that want one. */
  schema: Record<string, unknown>;
  schemaName: string;
  /** Most tokens the answer may take. */
  maxTokens: number;
}

export interface JsonAnswer {
  /** The answer as the model gave it: text to parse, or a value the API already parsed. */
  content: unknown;
  /** The model ran out of output tokens (finish_reason "length", or all of max_tokens spent): the answer is cut. */
  cut: boolean;
  tokensIn: number;
  tokensOut: number;
  /** Workers AI's billing unit for the call, from its tokens and the model's rates; 0 where none is billed. */
  neurons: number;
}

/** A conversation message as summarizers see it. */
export interface SummaryMessage {
  role: string;
  content: string;
  /** 0..1 */
  importance: number;
}

export interface ConversationSummary {
  summary: string;
  codeBlocks: string[];
  keyInsights: string[];
  /** 0..1 */
  importanceScore: number;
}

/** Conversation -> summary. Adapters: extractive (default, deterministic), Workers AI (optional). */
export interface Summarizer {
  readonly name: string;
  /** The summary text must fit `tokenLimit` tokens of the deployment's encoding. */
  summarize(messages: SummaryMessage[], tokenLimit: number): Promise<ConversationSummary>;
}

/** A file to convert: its bytes, its MIME type (already inferred) and a name for it. */
export interface DocumentFile {
  bytes: Uint8Array;
  mimeType: string;
  fileName: string;
}

/** A document converted once: its own title (if it states one), its page count (PDF) and its blocks in order. */
export interface ConvertedDocument {
  title: string | null;
  pages: number | null;
  blocks: DocumentBlock[];
}

/**
 * Files -> headings and text with their pages. Adapters: libraries that run anywhere (PDF, Word, HTML, CSV,
 * Markdown), and Workers AI's toMarkdown for what they cannot read (scans, images, spreadsheets). Throws
 * DocumentRejected (src/errors.ts) for a file it cannot convert.
 */
export interface DocumentConverter {
  readonly name: string;
  /** The MIME types it converts, for the error that refuses another. */
  readonly supportedTypes: readonly string[];
  /** `maxPages`: a longer document is refused before its pages are read. */
  convert(file: DocumentFile, options: { maxPages: number }): Promise<ConvertedDocument>;
}

/**
 * Where tool calls are counted, off the response path. Adapter: a queue whose consumer writes a whole
 * batch of requests in one statement (src/jobs/usage-consumer.ts).
 */
export interface UsageLog {
  /** A request's tool calls, or (`jobs`) what a queue batch's jobs of the tenant spent. */
  record(tenantId: string, calls: ToolCallRecord[], jobs?: JobRunRecord[]): Promise<void>;
}

/**
 * What tools and jobs get from the platform: configuration and the ports' adapters, chosen by
 * configuration (wrangler.toml vars / bindings, `.dev.vars` locally), never by environment sniffing.
 */
export interface Services {
  config: Config;
  /** What the billed bindings below (and the scope's D1) charge their units to: the current tool call or job. */
  meter: UnitMeter;
  embedder: Embedder;
  vectors: VectorIndex;
  jobs: JobQueue;
  usage: UsageLog;
  /** KV namespace of the semantic cache. */
  cache: KVNamespace;
  summarizer(): Promise<Summarizer>;
  /** Memory extraction's model (LLM); null when extraction is off for the deployment (LLM=off). */
  model: JsonModel | null;
  /** The optional rerank stage of search (RERANK_MODEL); absent when off. */
  reranker?: Reranker;
  tokens(): Promise<TokenCounter>;
  /** Documents to headings and text (DOCUMENT_CONVERTER). */
  documents: DocumentConverter;
  /** Where documents' originals are kept: R2 (miniflare's locally). */
  originals: R2Bucket;
  /** Work that may finish after the response (usage log). */
  waitUntil(promise: Promise<unknown>): void;
}
