import type { z } from "zod";
import { invalidParameter, type AppError } from "../errors";

/** Turns zod's first issue into one sentence that names the parameter and the limit. */
export function validationError(error: z.ZodError): AppError {
  const issue = error.issues[0]!;
  const parameter = issue.path.length > 0 ? issue.path.map(String).join(".") : "arguments";
  return invalidParameter(parameter, `Invalid parameter '${parameter}': ${describeIssue(issue)}`, {
    issues: error.issues.map((i) => ({ path: i.path.map(String).join("."), message: describeIssue(i) })),
  });
}

function describeIssue(issue: z.core.$ZodIssue): string {
  switch (issue.code) {
    case "invalid_type":
      return issue.input === undefined ? `is required (${issue.expected})` : `expected ${issue.expected}, got ${typeName(issue.input)}`;
    case "too_big":
      return `${subject(issue.origin)} must be ${issue.inclusive === false ? "less than" : "at most"} ${String(issue.maximum)}${got(issue)}`;
    case "too_small":
      return `${subject(issue.origin)} must be ${issue.inclusive === false ? "greater than" : "at least"} ${String(issue.minimum)}${got(issue)}`;
    case "invalid_value":
      return `must be one of ${issue.values.map((v) => JSON.stringify(v)).join(", ")}${got(issue)}`;
    case "unrecognized_keys":
      return `unknown keys ${issue.keys.join(", ")}`;
    default:
      return issue.message;
  }
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
  if (typeof input === "string") return issue.origin === "string" ? ` (got ${input.length})` : ` (got ${JSON.stringify(input.slice(0, 40))})`;
  if (Array.isArray(input)) return ` (got ${input.length})`;
  return "";
}

function typeName(value: unknown): string {
  if (value === null) return "null";
  if (Array.isArray(value)) return "array";
  return typeof value;
}
