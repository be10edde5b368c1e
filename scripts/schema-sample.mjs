// A value a tool's JSON Schema accepts, to call a tool without knowing it (scripts/try-clients.mjs, the
// strict-mode test). Derived from the schema alone: the default, a union's first non-null branch, an enum's first
// value, a range's minimum, an array's fewest items, an object's required properties.

/** A value the schema accepts: the first branch of a union, the minimum of a range, one item of an array. */
export function sample(schema) {
  if (schema.default !== undefined) return schema.default;
  if (schema.anyOf) return sample(schema.anyOf.find((s) => s.type !== "null") ?? schema.anyOf[0]);
  if (schema.const !== undefined) return schema.const;
  if (schema.enum) return schema.enum[0];
  switch (schema.type) {
    case "string":
      return "x".repeat(Math.max(1, schema.minLength ?? 1));
    case "integer":
    case "number":
      return schema.minimum ?? 1;
    case "boolean":
      return false;
    case "array":
      return Array.from({ length: Math.max(1, schema.minItems ?? 1) }, () =>
        sample(schema.items ?? { type: "string" }),
      );
    case "object":
      return Object.fromEntries((schema.required ?? []).map((k) => [k, sample(schema.properties[k])]));
    default:
      return null;
  }
}
