/**
 * The one error type. Tools and domain code throw it; each endpoint maps it once
 * (src/mcp/mcp-endpoint.ts to an MCP `isError` result, src/mcp/jsonrpc-endpoint.ts to a JSON-RPC error).
 */
export type ErrorCode =
  | "INVALID_PARAMETER"
  | "NOT_FOUND"
  | "SEGMENT_NOT_FOUND"
  | "PERMISSION_DENIED"
  | "CONFLICT"
  | "RATE_LIMITED"
  /** Retryable: the tenant's data is briefly unavailable for writes (a move between shards); retry_after_seconds says when. */
  | "UNAVAILABLE"
  /**
   * A tenant quota refused the call whole (src/core/tenants/quotas.ts): details name the quota, its limit, the
   * tenant's usage and what the call adds. Storage quotas (items, bytes) hold until the tenant deletes; the job
   * backlog is retryable (details.retryable, retry_after_seconds).
   */
  | "QUOTA_EXCEEDED"
  | "INTERNAL_ERROR";

export class AppError extends Error {
  constructor(
    readonly code: ErrorCode,
    message: string,
    readonly details: Record<string, unknown> = {},
  ) {
    super(message);
    this.name = "AppError";
  }

  toJSON(): { error: { code: ErrorCode; message: string; details: Record<string, unknown> } } {
    return { error: { code: this.code, message: this.message, details: this.details } };
  }
}

export function invalidParameter(parameter: string, message: string, details: Record<string, unknown> = {}): AppError {
  return new AppError("INVALID_PARAMETER", message, { parameter, ...details });
}

export function notFound(message: string, details: Record<string, unknown> = {}): AppError {
  return new AppError("NOT_FOUND", message, details);
}

export function permissionDenied(message: string, details: Record<string, unknown> = {}): AppError {
  return new AppError("PERMISSION_DENIED", message, details);
}

/** What a QUOTA_EXCEEDED error carries: the quota's name (as set through the admin API), its limit and the tenant's usage. */
export interface QuotaDetails {
  quota: string;
  limit: number;
  usage: number;
  /** What the refused call would have added. */
  adding: number;
  retryable: boolean;
  retry_after_seconds?: number;
}

export function quotaExceeded(message: string, details: QuotaDetails): AppError {
  return new AppError("QUOTA_EXCEEDED", message, { ...details });
}

/** Seconds a caller waits before retrying a write the shard refused during a tenant's move. */
export const MOVING_RETRY_SECONDS = 2;

/** Whether a D1 error is a shard's write fence (a trigger raised TENANT_MOVING: migrations/shard/0012). */
export function isTenantMoving(error: unknown): boolean {
  return (
    error instanceof Error &&
    /TENANT_MOVING/.test(`${error.message} ${String((error as { cause?: unknown }).cause ?? "")}`)
  );
}

/** Seconds a caller waits before retrying a call that D1 refused as overloaded or briefly unreachable. */
export const DATABASE_RETRY_SECONDS = 2;

/**
 * D1's transient errors, whose recommended action is to retry (developers.cloudflare.com/d1/observability/debug-d1,
 * "Error list"): the database overloaded (its queue full or too slow), the connection lost, the database object
 * reset (storage error or timeout, memory or CPU limit, a code update), a transient issue on the remote node.
 * Anything else (a constraint, a syntax error, a limit) is not retryable and stays an internal error.
 */
const TRANSIENT_D1 =
  /D1 DB is overloaded|Network connection lost|caused object to be reset|DB(?:'s isolate)? (?:exceeded its|reset because)|transient issue on remote node|Requests queued for too long/;

/** Whether an error is one of D1's transient ones (TRANSIENT_D1). */
export function isTransientD1(error: unknown): boolean {
  return (
    error instanceof Error &&
    TRANSIENT_D1.test(`${error.message} ${String((error as { cause?: unknown }).cause ?? "")}`)
  );
}

/**
 * The invocation's D1 queries (D1_QUERIES_PER_INVOCATION, src/db/invocation-queries.ts) ran out before or
 * during a call. Retryable: the call was not run, or its refused statement wrote nothing (a D1 batch is one
 * transaction), and a new request has a budget of its own. A call that was its request's first and still did
 * not fit cannot fit any request: that is the deployment's limit, not the client's to retry (INTERNAL_ERROR).
 */
export function queryBudgetError(limit: number, how: "not_run" | "refused" | "too_big" | "group_too_big"): AppError {
  const named = `D1's queries per invocation (${limit}, D1_QUERIES_PER_INVOCATION)`;
  if (how === "too_big") {
    return new AppError(
      "INTERNAL_ERROR",
      `This call needs more than ${named} allow one request; the operator can raise the limit (Workers Paid: 1000).`,
      {
        limit_name: "D1_QUERIES_PER_INVOCATION",
        limit,
        retryable: false,
      },
    );
  }
  return new AppError(
    "UNAVAILABLE",
    how === "not_run"
      ? `Not run: this request had spent ${named} on the calls before it. Send this call again in a new request.`
      : how === "group_too_big"
        ? `This request's consecutive calls of one tool, written together, need more than ${named}; nothing of them was written. Send them again in smaller requests.`
        : `This request ran out of ${named} during this call; the refused statement wrote nothing. Send this call again in a new request.`,
    {
      retry_after_seconds: 0,
      reason: "d1_queries_per_invocation",
      limit_name: "D1_QUERIES_PER_INVOCATION",
      limit,
      retryable: true,
    },
  );
}

/** Anything that is not an AppError becomes INTERNAL_ERROR with no stack or internals exposed. */
export function toAppError(error: unknown): AppError {
  if (error instanceof AppError) return error;
  if (isQueryBudgetExceeded(error)) return queryBudgetError(error.limit, "refused");
  if (isTenantMoving(error)) {
    return new AppError(
      "UNAVAILABLE",
      `This tenant's data is moving between shards and takes no writes for a few seconds; nothing was written. Retry after ${MOVING_RETRY_SECONDS} seconds.`,
      {
        retry_after_seconds: MOVING_RETRY_SECONDS,
        reason: "tenant_moving",
      },
    );
  }
  if (isTransientD1(error)) {
    console.error("transient database error", error);
    // A D1 batch is one transaction: the statement that failed wrote nothing (docs/faults.md says what a call spans).
    return new AppError(
      "UNAVAILABLE",
      `The database is overloaded or briefly unreachable; retry after ${DATABASE_RETRY_SECONDS} seconds (with backoff if it happens again).`,
      {
        retry_after_seconds: DATABASE_RETRY_SECONDS,
        reason: "database_unavailable",
      },
    );
  }
  console.error("internal error", error);
  return new AppError("INTERNAL_ERROR", "Internal server error");
}

/** A statement (or batch) refused because the invocation has spent its D1 queries; D1's words, and the limit. */
export class QueryBudgetExceeded extends Error {
  constructor(readonly limit: number) {
    super(
      `D1_ERROR: Too many API requests by single worker invocation: more than ${limit} D1 queries (D1_QUERIES_PER_INVOCATION)`,
    );
  }
}

/** Whether an error is the invocation's D1 query budget refusing a statement. */
export function isQueryBudgetExceeded(error: unknown): error is QueryBudgetExceeded {
  return error instanceof QueryBudgetExceeded;
}

/** Another runner saved first; this one stops (its last page was idempotent). */
export class MoveOvertaken extends Error {}

/**
 * A model call that did not give a usable answer. `capacity`: the provider is busy (Workers AI 3040, HTTP 429/5xx),
 * retry later; `quota`: a daily allocation is spent (Workers AI 3036/4006), retry after it resets; `output`: the
 * model could not meet the JSON schema; `failed`: anything else.
 */
export class ModelError extends Error {
  constructor(
    /**
     * capacity: busy, try again soon (the queue retries); quota: the provider's allocation is spent (wait for its
     * reset); output: the answer was unusable (ask again); context: the prompt is longer than the model takes (ask
     * for less); failed: anything else the endpoint refused (the window is tried again later).
     */
    readonly kind: "capacity" | "quota" | "output" | "context" | "failed",
    message: string,
  ) {
    super(message);
    this.name = "ModelError";
  }
}

/** Two writes of the same content raced; the loser retries and then answers the winner's id. */
export class ConcurrentDuplicate extends Error {
  readonly conflict = new AppError(
    "CONFLICT",
    "The same content was written concurrently; retry the call to get the existing id",
  );
}

/**
 * A document the converter cannot turn into text: broken, encrypted, over the page limit, of an unsupported type, or
 * needing OCR where no OCR is configured. Document ingestion reports it as INVALID_PARAMETER on the parameter that
 * carried the document, and stores nothing.
 */
export class DocumentRejected extends Error {
  constructor(
    message: string,
    readonly details: Record<string, unknown> = {},
  ) {
    super(message);
    this.name = "DocumentRejected";
  }
}
