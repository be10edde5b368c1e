import type { AppError } from "../errors";
import type { ToolContext } from "../tools/define-tool";
import { TOOLS, TOOLS_BY_NAME } from "../tools/index";
import type { Toolset } from "../tools/toolsets";
import { callTool, callTools } from "./dispatch";
import { checkEnvelope, checkToolCallParams, type Id, JSON_RPC, parseBody } from "./envelope";
import { listedTool } from "./tool-schemas";

type JsonRpcResponse =
  | { jsonrpc: "2.0"; id: Id; result: unknown }
  | { jsonrpc: "2.0"; id: Id; error: { code: number; message: string; data?: unknown } };

export const MAX_BATCH = 50;

export { JSON_RPC };

/**
 * Plain JSON-RPC 2.0 (seed 000's curl shape): `tools/call` answers with the tool's own result object.
 * Returns null when every message was a notification (nothing to answer).
 */
export async function handleJsonRpc(
  body: string,
  toolset: Toolset,
  ctx: ToolContext,
): Promise<{ status: number; payload: unknown } | null> {
  const parsed = parseBody(body);
  if (!parsed.ok) return { status: 400, payload: parsed.error };
  const message = parsed.message;
  if (Array.isArray(message)) {
    if (message.length > MAX_BATCH) {
      return {
        status: 400,
        payload: error(
          null,
          JSON_RPC.INVALID_REQUEST,
          `Invalid Request: a batch holds at most ${MAX_BATCH} calls (got ${message.length})`,
        ),
      };
    }
    ctx.reserveToolCalls(message.filter(isToolCall).length);
    const answers = await handleBatch(message, toolset, ctx);
    return answers.length > 0 ? { status: 200, payload: answers } : null;
  }
  const answer = await handleOne(message, toolset, ctx);
  if (!answer) return null;
  const invalid = "error" in answer && answer.error.code === JSON_RPC.INVALID_REQUEST;
  return { status: invalid ? 400 : 200, payload: answer };
}

/**
 * A batch in order. Consecutive well-formed tools/call entries go to dispatch together, so calls that
 * can share one write (log_chat, ...) do; everything else is answered one entry at a time.
 */
async function handleBatch(entries: unknown[], toolset: Toolset, ctx: ToolContext): Promise<JsonRpcResponse[]> {
  const answers: JsonRpcResponse[] = [];
  let run: { id: Id; hasId: boolean; name: unknown; args: unknown }[] = [];
  const flush = async () => {
    if (run.length === 0) return;
    const calls = run;
    run = [];
    const outcomes = await callTools(TOOLS_BY_NAME, toolset, calls, ctx);
    calls.forEach((call, i) => {
      const outcome = outcomes[i]!;
      if (call.hasId)
        answers.push(
          outcome.ok ? { jsonrpc: "2.0", id: call.id, result: outcome.value } : toolError(call.id, outcome.error),
        );
    });
  };
  for (const entry of entries) {
    const checked = checkEnvelope(entry);
    if (checked.ok && checked.envelope.method === "tools/call") {
      const call = checkToolCallParams(checked.envelope.id, checked.envelope.params);
      if (call.ok) {
        run.push({ id: checked.envelope.id, hasId: checked.envelope.hasId, name: call.name, args: call.args });
        continue;
      }
    }
    await flush();
    const answer = await handleOne(entry, toolset, ctx);
    if (answer) answers.push(answer);
  }
  await flush();
  return answers;
}

async function handleOne(message: unknown, toolset: Toolset, ctx: ToolContext): Promise<JsonRpcResponse | null> {
  const checked = checkEnvelope(message);
  if (!checked.ok) return checked.error;
  const { method, params, id: replyId, hasId } = checked.envelope;
  const answer = await dispatch(method, params, replyId, toolset, ctx);
  return hasId ? answer : null; // notifications get no answer, though they run
}

async function dispatch(
  method: string,
  params: unknown,
  id: Id,
  toolset: Toolset,
  ctx: ToolContext,
): Promise<JsonRpcResponse> {
  switch (method) {
    case "tools/list":
      return { jsonrpc: "2.0", id, result: { tools: TOOLS.filter((t) => toolset.includes(t)).map(listedTool) } };
    case "tools/call": {
      const call = checkToolCallParams(id, params);
      if (!call.ok) return call.error;
      const outcome = await callTool(TOOLS_BY_NAME, toolset, call.name, call.args, ctx);
      return outcome.ok ? { jsonrpc: "2.0", id, result: outcome.value } : toolError(id, outcome.error);
    }
    case "ping":
      return { jsonrpc: "2.0", id, result: {} };
    default:
      return error(
        id,
        JSON_RPC.METHOD_NOT_FOUND,
        `Method not found: '${method}'. This endpoint answers tools/list, tools/call and ping; use /mcp for the full MCP protocol.`,
      );
  }
}

/**
 * AppError codes mapped once to JSON-RPC codes. QUOTA_EXCEEDED is a server error (-32000) whose data names the
 * quota ({code, details: {quota, limit, usage, adding, retryable}}); it is not -32029, which means "this key or
 * tenant sent too many calls" and which clients may retry blindly.
 */
function toolError(id: Id, e: AppError): JsonRpcResponse {
  const code =
    e.code === "INVALID_PARAMETER"
      ? JSON_RPC.INVALID_PARAMS
      : e.code === "INTERNAL_ERROR"
        ? JSON_RPC.INTERNAL
        : e.code === "RATE_LIMITED"
          ? JSON_RPC.RATE_LIMITED
          : JSON_RPC.SERVER;
  return error(id, code, e.message, { code: e.code, details: e.details });
}

function error(id: Id, code: number, message: string, data?: unknown): JsonRpcResponse {
  return { jsonrpc: "2.0", id, error: data === undefined ? { code, message } : { code, message, data } };
}

function isToolCall(entry: unknown): boolean {
  return typeof entry === "object" && entry !== null && (entry as { method?: unknown }).method === "tools/call";
}
