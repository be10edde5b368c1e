/**
 * Rewrites a JSON Schema (as zod renders it) into the portable subset every MCP client and model
 * provider accepts: a single `type` per schema (`anyOf` for unions), no boolean schemas, and no empty
 * `{}` schemas (a value of any JSON type is spelled out as an `anyOf` of single types); only
 * `additionalProperties: false` stays a boolean, as every client reads it. The rewrite
 * keeps the meaning: it accepts exactly what the original accepted.
 */
export type JsonSchema = Record<string, unknown>;

/** Keywords that only annotate: a schema with nothing else accepts any value. */
const ANNOTATIONS = new Set([
  "description",
  "title",
  "default",
  "examples",
  "$comment",
  "deprecated",
  "readOnly",
  "writeOnly",
  "$schema",
  "$id",
]);

const BY_TYPE: Record<string, readonly string[]> = {
  string: ["minLength", "maxLength", "pattern", "format", "contentEncoding", "contentMediaType"],
  number: ["minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf"],
  integer: ["minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf"],
  array: ["items", "prefixItems", "minItems", "maxItems", "uniqueItems", "contains", "minContains", "maxContains"],
  object: [
    "properties",
    "required",
    "additionalProperties",
    "patternProperties",
    "propertyNames",
    "minProperties",
    "maxProperties",
  ],
  boolean: [],
  null: [],
};

const SCHEMA_MAPS = ["properties", "patternProperties", "$defs", "definitions"];
const SCHEMA_LISTS = ["anyOf", "oneOf", "allOf", "prefixItems"];
const SCHEMA_SLOTS = ["items", "additionalProperties", "not", "contains", "propertyNames", "if", "then", "else"];

/** Any JSON value, each branch a single type (arrays and objects of any JSON values). */
export function anyJsonValue(): JsonSchema {
  return {
    anyOf: [
      { type: "string" },
      { type: "number" },
      { type: "boolean" },
      { type: "null" },
      { type: "object" },
      { type: "array" },
    ],
  };
}

export function portableSchema(schema: unknown): JsonSchema {
  if (schema === false) return { not: {} };
  if (schema === true || typeof schema !== "object" || schema === null) return anyJsonValue();
  const source = schema as JsonSchema;
  const out: JsonSchema = {};
  for (const [key, value] of Object.entries(source)) {
    if (SCHEMA_MAPS.includes(key) && isObject(value)) {
      out[key] = Object.fromEntries(Object.entries(value).map(([k, v]) => [k, portableSchema(v)]));
    } else if (SCHEMA_LISTS.includes(key) && Array.isArray(value)) {
      out[key] = value.map(portableSchema);
    } else if (key === "additionalProperties" && value === false) {
      out[key] = false; // the one boolean every client and provider reads: no other keys
    } else if (SCHEMA_SLOTS.includes(key) && (isObject(value) || typeof value === "boolean")) {
      // `not: {}` is the object form of the always-false schema: keep it as it is.
      out[key] = key === "not" && isObject(value) && Object.keys(value).length === 0 ? {} : portableSchema(value);
    } else {
      out[key] = value;
    }
  }
  if (Array.isArray(out.type)) return splitTypes(out, out.type as string[]);
  if (Object.keys(out).every((k) => ANNOTATIONS.has(k))) return { ...out, ...anyJsonValue() };
  return out;
}

/** `{type: ["string", "null"], maxLength: 3}` -> `{anyOf: [{type: "string", maxLength: 3}, {type: "null"}]}`. */
function splitTypes(schema: JsonSchema, types: string[]): JsonSchema {
  const outer: JsonSchema = {};
  const shared: JsonSchema = {};
  for (const [key, value] of Object.entries(schema)) {
    if (key === "type") continue;
    if (ANNOTATIONS.has(key)) outer[key] = value;
    else shared[key] = value;
  }
  const branches = types.map((type) => {
    const branch: JsonSchema = { type };
    for (const [key, value] of Object.entries(shared)) {
      if (key === "enum" && Array.isArray(value)) branch.enum = value.filter((v) => jsonType(v, type));
      else if (key === "const") {
        if (jsonType(value, type)) branch.const = value;
      } else if ((BY_TYPE[type] ?? []).includes(key)) branch[key] = value;
      else if (!Object.values(BY_TYPE).some((keys) => keys.includes(key))) branch[key] = value;
    }
    return branch;
  });
  const usable = branches.filter(
    (b) => !(Array.isArray(b.enum) && b.enum.length === 0) && !("const" in shared && !("const" in b)),
  );
  return types.length === 1 ? { ...outer, ...usable[0] } : { ...outer, anyOf: usable };
}

function jsonType(value: unknown, type: string): boolean {
  if (type === "null") return value === null;
  if (type === "integer") return Number.isInteger(value);
  if (type === "array") return Array.isArray(value);
  if (type === "object") return isObject(value);
  return typeof value === type;
}

function isObject(value: unknown): value is JsonSchema {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}
