/** A value a tool's JSON Schema accepts (schema-sample.mjs). */
export function sample(schema: Record<string, any>): unknown;
