// What a deployment needs, read from wrangler.toml and .dev.vars.example alone (no network): the plan that
// `npm run deploy` carries out and `npm run deploy -- --dry-run` prints.
import { readFileSync } from "node:fs";
import { VECTORIZE_METADATA_INDEXES } from "../src/adapters/vectorize-metadata.ts";

export async function readWranglerConfig(configPath = "wrangler.toml") {
  const { experimental_readRawConfig } = await import("wrangler");
  return experimental_readRawConfig({ config: configPath }).rawConfig;
}

/** The secrets a deployment needs: the names in .dev.vars.example (what the Deploy to Cloudflare button asks for). */
export function secretNames(examplePath = ".dev.vars.example") {
  return readFileSync(examplePath, "utf8")
    .split("\n")
    .flatMap((line) => /^\s*([A-Z0-9_]+)\s*=/.exec(line)?.[1] ?? []);
}

/** The name wrangler gives a resource it provisions for a binding without one (KV namespaces). */
export function provisionedName(worker, binding) {
  return `${worker}-${binding.toLowerCase().replaceAll("_", "-")}`;
}

/**
 * Every resource the config binds, with what creating it takes:
 * - D1 databases by database_name (wrangler finds them by name; migrations per binding);
 * - KV namespaces by the title wrangler would provision (their ids are written into wrangler.toml);
 * - Vectorize indexes with the embedder's dimensions (EMBEDDING_DIMENSIONS), cosine, and their metadata indexes;
 * - every queue a producer, consumer or dead-letter setting names;
 * - R2 buckets by bucket_name (documents' originals);
 * - the secrets of .dev.vars.example.
 */
export function deployPlan(config, secrets) {
  const problems = [];
  if (!config.name) problems.push("wrangler.toml has no `name` (the Worker's name)");
  const d1 = (config.d1_databases ?? []).map((d) => {
    if (!d.database_name) problems.push(`D1 binding ${d.binding} has no database_name`);
    return { binding: d.binding, name: d.database_name, migrations: d.migrations_dir ?? "migrations" };
  });
  const kv = (config.kv_namespaces ?? []).map((k) => ({
    binding: k.binding,
    title: provisionedName(config.name, k.binding),
    id: k.id ?? null,
  }));
  const dimensions = Number(config.vars?.EMBEDDING_DIMENSIONS);
  const vectorize = (config.vectorize ?? []).map((v) => {
    if (!Number.isInteger(dimensions) || dimensions < 1 || dimensions > 1536) {
      problems.push(
        `[vars] EMBEDDING_DIMENSIONS must be an integer from 1 to 1536 (Vectorize's limit) for index ${v.index_name}; got ${config.vars?.EMBEDDING_DIMENSIONS}`,
      );
    }
    return {
      binding: v.binding,
      index: v.index_name,
      dimensions,
      metric: "cosine",
      metadataIndexes: VECTORIZE_METADATA_INDEXES.map((m) => ({ ...m })),
    };
  });
  const queues = [
    ...new Set([
      ...(config.queues?.producers ?? []).map((p) => p.queue),
      ...(config.queues?.consumers ?? []).flatMap((c) => [c.queue, c.dead_letter_queue].filter(Boolean)),
    ]),
  ];
  const r2 = (config.r2_buckets ?? []).map((b) => {
    if (!b.bucket_name) problems.push(`R2 binding ${b.binding} has no bucket_name`);
    return { binding: b.binding, name: b.bucket_name };
  });
  if (problems.length > 0)
    throw new Error(`wrangler.toml cannot be deployed as it is:\n  - ${problems.join("\n  - ")}`);
  return { worker: config.name, d1, kv, vectorize, queues, r2, secrets };
}

/** The plan as the lines `--dry-run` prints. */
export function formatPlan(plan) {
  return [
    `Deploy plan for Worker '${plan.worker}' (from wrangler.toml; each resource is found by name or created):`,
    ...plan.d1.map((d) => `  D1 database     ${d.name}  (binding ${d.binding}; migrations from ${d.migrations})`),
    ...plan.kv.map((k) => `  KV namespace    ${k.id ? `id ${k.id}` : k.title}  (binding ${k.binding})`),
    ...plan.vectorize.flatMap((v) => [
      `  Vectorize index ${v.index}  (binding ${v.binding}; ${v.dimensions} dimensions, ${v.metric})`,
      ...v.metadataIndexes.map((m) => `    metadata index ${m.propertyName} (${m.type}), before the first upsert`),
    ]),
    ...plan.queues.map((q) => `  Queue           ${q}`),
    ...(plan.r2 ?? []).map((b) => `  R2 bucket       ${b.name}  (binding ${b.binding})`),
    ...plan.secrets.map((s) => `  Secret          ${s}  (generated and printed once when the Worker has none)`),
    `Then: D1 migrations to every database (control first), wrangler deploy, and the smoke test against the new URL.`,
  ];
}
