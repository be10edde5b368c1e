/**
 * The Vectorize metadata indexes the adapter filters on (vectorize-index.ts). Vectorize indexes a metadata
 * property only for vectors written after its index exists, so `npm run deploy` creates these before the
 * first upsert (scripts/deploy-plan.mjs reads this file).
 */
export const VECTORIZE_METADATA_INDEXES = [{ propertyName: "project", type: "string" }] as const;
