import { z } from "zod";
import { type AppError, invalidParameter } from "./errors";

/** Turns zod's first issue into one sentence that names the parameter and the limit. */
export function validationError(error: z.ZodError): AppError {
  const issue = innermost(error.issues[0]!);
  const parameter = parameterOf(issue);
  return invalidParameter(parameter, `Invalid parameter '${parameter}': ${describeIssue(issue)}`, {
    issues: error.issues.map(innermost).map((i) => ({ path: parameterOf(i), message: describeIssue(i) })),
  });
}

/**
 * The object schema with unknown keys refused (JSON Schema `additionalProperties: false`); the error
 * names the unknown keys and lists the accepted ones, so a misspelt `namespace` cannot go unnoticed.
 */
export function strictInput<T extends z.ZodObject>(schema: T): T {
  const accepted = Object.keys(schema.shape);
  return schema.clone({
    ...schema._zod.def,
    catchall: z.never(),
    error: (issue: z.core.$ZodRawIssue) =>
      issue.code === "unrecognized_keys" ? unknownKeysMessage(issue.keys, accepted) : undefined,
  }) as T;
}

const UNKNOWN_PREFIX = "unknown parameter";

function unknownKeysMessage(keys: string[], accepted: string[]): string {
  const names = keys.map((k) => `'${k}'`).join(", ");
  const list = accepted.length > 0 ? `accepted parameters: ${accepted.join(", ")}` : "this takes no parameters";
  return `${UNKNOWN_PREFIX}${keys.length > 1 ? "s" : ""} ${names}; ${list}`;
}

/** An issue path as a parameter name; an unknown key names itself (e.g. `namespce`, `filters.colour`). */
function parameterOf(issue: z.core.$ZodIssue): string {
  const path = issue.path.map(String);
  if (issue.code === "unrecognized_keys" && issue.keys.length > 0) path.push(issue.keys[0]!);
  return path.length > 0 ? path.join(".") : "arguments";
}

/**
 * For a parameter that takes several shapes (an object or its JSON string, a date string or epoch ms),
 * zod reports "Invalid input" with one issue list per shape. When the value has the type of one shape,
 * that shape's own issue says what is wrong; otherwise the union issue itself lists the accepted types.
 */
function innermost(issue: z.core.$ZodIssue): z.core.$ZodIssue {
  if (issue.code !== "invalid_union" || issue.errors.length === 0) return issue;
  const input = (issue as { input?: unknown }).input;
  const matching = issue.errors.filter(
    (branch) => !branch.some((i) => i.code === "invalid_type" && i.path.length === 0),
  );
  if (matching.length !== 1 || input === undefined) return issue;
  const inner = matching[0]![0]!;
  return innermost({ ...inner, path: [...issue.path, ...inner.path] } as z.core.$ZodIssue);
}

function describeIssue(issue: z.core.$ZodIssue): string {
  const input = (issue as { input?: unknown }).input;
  switch (issue.code) {
    case "invalid_type":
      if (issue.expected === "number" && isNonFinite(issue, input)) return "must be a finite number";
      return input === undefined && !("received" in issue)
        ? `is required (${issue.expected})`
        : `expected ${issue.expected}, got ${typeName(input)}`;
    case "invalid_union":
      return `expected ${acceptedShapes(issue).join(" or ")}, got ${typeName(input)}`;
    case "too_big":
      return `${subject(issue.origin)} must be ${issue.inclusive === false ? "less than" : "at most"} ${String(issue.maximum)}${got(issue)}`;
    case "too_small":
      return `${subject(issue.origin)} must be ${issue.inclusive === false ? "greater than" : "at least"} ${String(issue.minimum)}${got(issue)}`;
    case "invalid_value":
      return `must be one of ${issue.values.map((v) => JSON.stringify(v)).join(", ")}${got(issue)}`;
    case "unrecognized_keys":
      return issue.message.startsWith(UNKNOWN_PREFIX)
        ? issue.message
        : `${UNKNOWN_PREFIX}${issue.keys.length > 1 ? "s" : ""} ${issue.keys.map((k) => `'${k}'`).join(", ")}`;
    default:
      return issue.message;
  }
}

/** The types a union accepts, from each branch's top-level type issue (e.g. "string", "object"). */
function acceptedShapes(issue: z.core.$ZodIssueInvalidUnion): string[] {
  const shapes = issue.errors.map((branch) => {
    const top = branch.find((i) => i.path.length === 0);
    if (top?.code === "invalid_type")
      return top.expected === "string" ? "a string" : `${/^[aeiou]/.test(top.expected) ? "an" : "a"} ${top.expected}`;
    if (top?.code === "invalid_value") return top.values.map((v) => JSON.stringify(v)).join(" or ");
    return "another shape";
  });
  return [...new Set(shapes)];
}

function isNonFinite(issue: z.core.$ZodIssue, input: unknown): boolean {
  if (typeof input === "number") return !Number.isFinite(input);
  const received = (issue as { received?: unknown }).received;
  return received === "Infinity" || received === "-Infinity" || received === "NaN";
}

function subject(origin: string): string {
  if (origin === "string") return "length";
  if (origin === "array" || origin === "set") return "number of items";
  return "value";
}

function got(issue: { input?: unknown; origin?: string }): string {
  const input = issue.input;
  if (input === undefined) return "";
  if (typeof input === "number") return ` (got ${input})`;
  if (typeof input === "string")
    return issue.origin === "string" ? ` (got ${input.length})` : ` (got ${JSON.stringify(input.slice(0, 40))})`;
  if (Array.isArray(input)) return ` (got ${input.length})`;
  return "";
}

function typeName(value: unknown): string {
  if (value === null) return "null";
  if (Array.isArray(value)) return "array";
  return typeof value;
}
