import { AppError } from "../errors";

/**
 * Vectorize indexes are the bindings named VECTORIZE and VECTORIZE_<name> (wrangler.toml). One index holds at most
 * 50,000 namespaces (one a tenant) and 10 M vectors (one a chunk), whatever the number of D1 shards, so a deployment
 * past either adds an index: a new binding and `npm run deploy` (which creates it), no code change. A tenant's index is
 * chosen when the tenant is created (tenants.vector_index) and never changes; NULL means VECTORIZE, the first.
 */
export const DEFAULT_VECTOR_INDEX = "VECTORIZE";

/** What one Vectorize index holds at most (developers.cloudflare.com/vectorize/platform/limits, paid plan). */
export const VECTORIZE_INDEX_LIMITS = { namespaces: 50_000, vectors: 10_000_000 } as const;

/** Any object of bindings (the Worker's env): indexes are found among its properties. */
export type VectorIndexBindings = object;

const binding = (env: VectorIndexBindings, name: string): unknown => (env as Record<string, unknown>)[name];

const isIndexName = (name: string) => name === DEFAULT_VECTOR_INDEX || name.startsWith(`${DEFAULT_VECTOR_INDEX}_`);

/** The deployment's Vectorize indexes by binding name: VECTORIZE first, then the others in name order. */
export function vectorIndexNames(env: VectorIndexBindings): string[] {
  return Object.keys(env)
    .filter((name) => isIndexName(name) && isVectorize(binding(env, name)))
    .sort(
      (a, b) =>
        Number(b === DEFAULT_VECTOR_INDEX) - Number(a === DEFAULT_VECTOR_INDEX) ||
        a.localeCompare(b, "en", { numeric: true }),
    );
}

/** The binding of an index, or INTERNAL_ERROR when the deployment has no such binding (a removed index). */
export function vectorIndexBinding(env: VectorIndexBindings, name: string | null): Vectorize {
  const indexName = name ?? DEFAULT_VECTOR_INDEX;
  const found = isIndexName(indexName) ? binding(env, indexName) : undefined;
  if (!isVectorize(found))
    throw new AppError(
      "INTERNAL_ERROR",
      `This deployment has no Vectorize index '${indexName}' (no binding of that name)`,
      { vector_index: indexName },
    );
  return found;
}

export interface VectorIndexFill {
  name: string;
  /** Vectors in the index, as Vectorize reports them (describe(): processed mutations only, so it may lag writes). */
  vectors: number;
  /** Tenants placed on it (control database): each is a namespace. */
  tenants: number;
}

/** How full each index is: Vectorize's own vector count (one call an index, in parallel) and its tenants. */
export async function vectorIndexFill(env: VectorIndexBindings, control: D1Database): Promise<VectorIndexFill[]> {
  const names = vectorIndexNames(env);
  const [infos, counts] = await Promise.all([
    Promise.all(names.map((name) => vectorIndexBinding(env, name).describe())),
    control
      .prepare(
        `SELECT COALESCE(vector_index, '${DEFAULT_VECTOR_INDEX}') AS name, COUNT(*) AS n FROM tenants GROUP BY 1`,
      )
      .all<{ name: string; n: number }>(),
  ]);
  const tenants = new Map(counts.results.map((r) => [r.name, r.n]));
  return names.map((name, i) => ({ name, vectors: infos[i]!.vectorCount, tenants: tenants.get(name) ?? 0 }));
}

/**
 * A new tenant's index: among those with room for another namespace and below their vector limit, the one with the
 * fewest vectors (its tenants' data to come is unknown; what is there is what fills it), then the fewest tenants,
 * then the first name. A deployment of one index takes it without asking.
 */
export async function placeVectorIndex(env: VectorIndexBindings, control: D1Database): Promise<string> {
  const names = vectorIndexNames(env);
  if (names.length === 0)
    throw new AppError(
      "INTERNAL_ERROR",
      `This deployment has no Vectorize index: bind one named ${DEFAULT_VECTOR_INDEX} (wrangler.toml)`,
    );
  if (names.length === 1) return names[0]!;
  return chooseVectorIndex(await vectorIndexFill(env, control));
}

/** placeVectorIndex's choice from the indexes' fill (in vectorIndexNames' order). */
export function chooseVectorIndex(fill: VectorIndexFill[]): string {
  const open = fill.filter(
    (f) => f.tenants < VECTORIZE_INDEX_LIMITS.namespaces && f.vectors < VECTORIZE_INDEX_LIMITS.vectors,
  );
  if (open.length === 0) {
    throw new AppError(
      "INTERNAL_ERROR",
      `Every Vectorize index is full (${VECTORIZE_INDEX_LIMITS.namespaces.toLocaleString("en")} tenants or ${VECTORIZE_INDEX_LIMITS.vectors.toLocaleString("en")} vectors each): ` +
        `add a [[vectorize]] binding named ${DEFAULT_VECTOR_INDEX}_<name> to wrangler.toml and run npm run deploy`,
      { vector_indexes: fill },
    );
  }
  return [...open].sort((a, b) => a.vectors - b.vectors || a.tenants - b.tenants)[0]!.name;
}

function isVectorize(value: unknown): value is Vectorize {
  const v = value as Vectorize | null;
  return (
    typeof v === "object" &&
    v !== null &&
    typeof v.query === "function" &&
    typeof v.upsert === "function" &&
    typeof v.describe === "function"
  );
}
