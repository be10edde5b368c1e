/** A value a tool's JSON Schema accepts (schema-sample.mjs). */
// biome-ignore lint/suspicious/noExplicitAny: any JSON Schema object
export function sample(schema: Record<string, any>): unknown;
