/**
 * The JSON-RPC mistakes both endpoints (/mcp and /jsonrpc) answer alike: the same code, message and
 * HTTP status for the same malformed body, envelope or tools/call params.
 */
export type Id = string | number | null;
export interface JsonRpcError {
  jsonrpc: "2.0";
  id: Id;
  error: { code: number; message: string; data?: unknown };
}

export const JSON_RPC = {
  PARSE_ERROR: -32700,
  INVALID_REQUEST: -32600,
  METHOD_NOT_FOUND: -32601,
  INVALID_PARAMS: -32602,
  INTERNAL: -32603,
  SERVER: -32000,
  RATE_LIMITED: -32029,
} as const;

export function rpcError(id: Id, code: number, message: string, data?: unknown): JsonRpcError {
  return { jsonrpc: "2.0", id, error: data === undefined ? { code, message } : { code, message, data } };
}

/** Invalid Request and Parse error travel with HTTP 400, everything else with 200. */
export function httpStatusOf(answer: JsonRpcError): 200 | 400 {
  return answer.error.code === JSON_RPC.INVALID_REQUEST || answer.error.code === JSON_RPC.PARSE_ERROR ? 400 : 200;
}

export type ParsedBody = { ok: true; message: unknown } | { ok: false; error: JsonRpcError };

/** The body as JSON, or the parse error; an empty batch is an Invalid Request. */
export function parseBody(body: string): ParsedBody {
  let message: unknown;
  try {
    message = JSON.parse(body);
  } catch {
    return { ok: false, error: rpcError(null, JSON_RPC.PARSE_ERROR, "Parse error: request body is not valid JSON") };
  }
  if (Array.isArray(message) && message.length === 0)
    return { ok: false, error: rpcError(null, JSON_RPC.INVALID_REQUEST, "Invalid Request: empty batch") };
  return { ok: true, message };
}

export interface Envelope {
  method: string;
  params: unknown;
  id: Id;
  /** False for a notification (no id): it runs but gets no answer. */
  hasId: boolean;
}

/** One message's envelope, or the Invalid Request answer for it. */
export function checkEnvelope(message: unknown): { ok: true; envelope: Envelope } | { ok: false; error: JsonRpcError } {
  if (typeof message !== "object" || message === null || Array.isArray(message)) {
    return {
      ok: false,
      error: rpcError(null, JSON_RPC.INVALID_REQUEST, "Invalid Request: expected a JSON-RPC 2.0 object"),
    };
  }
  const { jsonrpc, method, params, id } = message as Record<string, unknown>;
  const hasId = "id" in message;
  const replyId: Id = typeof id === "string" || typeof id === "number" ? id : null;
  if (hasId && id !== null && typeof id !== "string" && typeof id !== "number") {
    return {
      ok: false,
      error: rpcError(null, JSON_RPC.INVALID_REQUEST, "Invalid Request: 'id' must be a string, number or null"),
    };
  }
  if (jsonrpc !== "2.0")
    return {
      ok: false,
      error: rpcError(replyId, JSON_RPC.INVALID_REQUEST, "Invalid Request: 'jsonrpc' must be \"2.0\""),
    };
  if (typeof method !== "string")
    return {
      ok: false,
      error: rpcError(replyId, JSON_RPC.INVALID_REQUEST, "Invalid Request: 'method' must be a string"),
    };
  return { ok: true, envelope: { method, params, id: replyId, hasId } };
}

/** tools/call params: `{name: string, arguments?: object}`, or the Invalid params answer naming what is wrong. */
export function checkToolCallParams(
  id: Id,
  params: unknown,
): { ok: true; name: string; args: Record<string, unknown> | undefined } | { ok: false; error: JsonRpcError } {
  if (typeof params !== "object" || params === null || Array.isArray(params)) {
    return {
      ok: false,
      error: rpcError(id, JSON_RPC.INVALID_PARAMS, 'Invalid params: expected {"name": <tool>, "arguments": {...}}', {
        parameter: "params",
      }),
    };
  }
  const { name, arguments: args } = params as Record<string, unknown>;
  if (typeof name !== "string") {
    const problem =
      name === undefined
        ? "is required (the tool name as a string)"
        : `expected the tool name as a string, got ${typeName(name)}`;
    return {
      ok: false,
      error: rpcError(id, JSON_RPC.INVALID_PARAMS, `Invalid parameter 'name': ${problem}`, { parameter: "name" }),
    };
  }
  if (args !== undefined && (typeof args !== "object" || args === null || Array.isArray(args))) {
    return {
      ok: false,
      error: rpcError(
        id,
        JSON_RPC.INVALID_PARAMS,
        `Invalid parameter 'arguments': expected an object, got ${typeName(args)}`,
        { parameter: "arguments" },
      ),
    };
  }
  return { ok: true, name, args: args as Record<string, unknown> | undefined };
}

/**
 * For /mcp: the answer to a body with one of the mistakes above, checked before the MCP SDK sees it
 * (its own answers are zod dumps or differ in code). Null when the body is well formed.
 */
export function findMistake(body: string): JsonRpcError | null {
  const parsed = parseBody(body);
  if (!parsed.ok) return parsed.error;
  if (Array.isArray(parsed.message)) return null; // a batch's entries are answered one by one, by the SDK
  if (isResponse(parsed.message)) return null; // a client's answer to a server request
  const checked = checkEnvelope(parsed.message);
  if (!checked.ok) return checked.error;
  const { method, params, id, hasId } = checked.envelope;
  if (method === "tools/call" && hasId) {
    const call = checkToolCallParams(id, params);
    if (!call.ok) return call.error;
  }
  return null;
}

function isResponse(message: unknown): boolean {
  return (
    typeof message === "object" &&
    message !== null &&
    !("method" in message) &&
    ("result" in message || "error" in message)
  );
}

function typeName(value: unknown): string {
  if (value === null) return "null";
  if (Array.isArray(value)) return "array";
  return typeof value;
}
