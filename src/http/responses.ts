import type { Context } from "hono";
import type { AppError, ErrorCode } from "../errors";

const HTTP_STATUS: Record<ErrorCode, 400 | 403 | 404 | 409 | 429 | 500 | 503> = {
  INVALID_PARAMETER: 400,
  NOT_FOUND: 404,
  SEGMENT_NOT_FOUND: 404,
  PERMISSION_DENIED: 403,
  CONFLICT: 409,
  RATE_LIMITED: 429,
  UNAVAILABLE: 503,
  // A storage quota (items, bytes) is 403: the request was understood and is refused until the tenant deletes or
  // the operator raises the quota, so retrying the same call cannot help (429 would invite clients to retry; 413
  // speaks of the request's size, but a one-line write is refused too when the tenant is full; 507 is a 5xx a
  // client would read as the server's fault). The retryable job backlog is 429 with Retry-After (errorResponse).
  QUOTA_EXCEEDED: 403,
  INTERNAL_ERROR: 500,
};

/** An AppError as a plain HTTP JSON response (admin API). */
export function errorResponse(c: Context, error: AppError): Response {
  const retryAfter = error.details.retry_after_seconds;
  if (typeof retryAfter === "number") c.header("Retry-After", String(retryAfter));
  return c.json(
    error.toJSON(),
    error.code === "QUOTA_EXCEEDED" && error.details.retryable === true ? 429 : HTTP_STATUS[error.code],
  );
}

/** A JSON-RPC error body outside a tool call (auth, limits, transport). */
export function jsonRpcErrorBody(code: number, message: string, data?: unknown) {
  return { jsonrpc: "2.0" as const, error: data === undefined ? { code, message } : { code, message, data }, id: null };
}
