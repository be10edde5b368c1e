import { isTokenEncoding, type TokenEncoding } from "./core/tokens";
import type { Env } from "./env";

/** Typed view of wrangler.toml vars, with the documented defaults (README "Configuration"). */
export interface Config {
  maxBodyBytes: number;
  allowedOrigins: string[];
  tokenEncoding: TokenEncoding;
  embedder: "workers-ai" | "openai" | "local";
  embeddingModel: string;
  embeddingDimensions: number;
  vectorIndex: "vectorize" | "local";
  /** Weight of the vector list in reciprocal rank fusion (keyword list: 1); null = by embedder. */
  hybridVectorWeight: number | null;
}

export function readConfig(env: Env): Config {
  const encoding = env.TOKEN_ENCODING || "o200k_base";
  if (!isTokenEncoding(encoding)) throw new Error(`Configuration error: TOKEN_ENCODING '${encoding}' is not one of o200k_base, cl100k_base`);
  return {
    maxBodyBytes: positiveInt(env.MAX_BODY_BYTES, 1_048_576),
    allowedOrigins: (env.ALLOWED_ORIGINS ?? "")
      .split(",")
      .map((s) => s.trim())
      .filter(Boolean),
    tokenEncoding: encoding,
    embedder: oneOf(env.EMBEDDER, ["workers-ai", "openai", "local"] as const, "EMBEDDER"),
    embeddingModel: env.EMBEDDING_MODEL || "@cf/baai/bge-base-en-v1.5",
    embeddingDimensions: positiveInt(env.EMBEDDING_DIMENSIONS, 768),
    vectorIndex: oneOf(env.VECTOR_INDEX, ["vectorize", "local"] as const, "VECTOR_INDEX"),
    hybridVectorWeight: env.HYBRID_VECTOR_WEIGHT ? nonNegative(env.HYBRID_VECTOR_WEIGHT, "HYBRID_VECTOR_WEIGHT") : null,
  };
}

function oneOf<T extends string>(value: string | undefined, allowed: readonly T[], name: string): T {
  const v = value || allowed[0]!;
  if (!(allowed as readonly string[]).includes(v)) throw new Error(`Configuration error: ${name} '${v}' is not one of ${allowed.join(", ")}`);
  return v as T;
}

function positiveInt(value: string | undefined, fallback: number): number {
  const n = Number(value);
  return Number.isInteger(n) && n > 0 ? n : fallback;
}

function nonNegative(value: string, name: string): number {
  const n = Number(value);
  if (!Number.isFinite(n) || n < 0) throw new Error(`Configuration error: ${name} '${value}' is not a number ≥ 0`);
  return n;
}
