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

/** Anything that is not an AppError becomes INTERNAL_ERROR with no stack or internals exposed. */
export function toAppError(error: unknown): AppError {
  if (error instanceof AppError) return error;
  console.error("internal error", error);
  return new AppError("INTERNAL_ERROR", "Internal server error");
}
