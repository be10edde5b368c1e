import {
  type CallToolResult,
  createMcpHandler,
  isLegacyRequest,
  type ListToolsResult,
  Server,
  WebStandardStreamableHTTPServerTransport,
} from "@modelcontextprotocol/server";
import type { AppError } from "../errors";
import type { ToolContext } from "../tools/define-tool";
import { TOOLS, TOOLS_BY_NAME } from "../tools/index";
import type { Toolset } from "../tools/toolsets";
import { callTool } from "./dispatch";
import { findMistake, httpStatusOf } from "./envelope";
import { listedTool, structuredContent } from "./tool-schemas";

export const SERVER_INFO = { name: "context-edge", version: "0.1.0" };

const INSTRUCTIONS =
  "Context Edge gives you long-term memory: store memories and conversation messages, search them " +
  "(keyword + semantic), and build context windows that fit a token budget. Call list_tool_identifiers " +
  "to see every tool; this connection shows only its enabled toolsets (/mcp?toolsets=...).";

/**
 * MCP over streamable HTTP in both protocol eras, stateless: a fresh server from one factory per request,
 * nothing kept in the isolate between requests.
 * - 2026-07-28 (per-request `_meta` envelope, `server/discover`, Mcp-Method / Mcp-Name headers): the SDK's
 *   `createMcpHandler`.
 * - 2025-era (initialize, then plain requests): the same server over the SDK's stateless streamable HTTP
 *   transport, answering JSON or SSE by the order of the client's Accept header.
 * A malformed body, envelope or tools/call params gets the answer /jsonrpc gives (src/mcp/envelope.ts).
 */
export async function handleMcpPost(request: Request, toolset: Toolset, ctx: ToolContext): Promise<Response> {
  const mistake = findMistake(await request.clone().text());
  if (mistake) return Response.json(mistake, { status: httpStatusOf(mistake) });
  const factory = () => buildServer(toolset, ctx);
  if (await isLegacyRequest(request)) return serveLegacy(factory(), request);
  return createMcpHandler(factory, { legacy: "reject" }).fetch(request);
}

function buildServer(toolset: Toolset, ctx: ToolContext): Server {
  const server = new Server(SERVER_INFO, {
    capabilities: { tools: { listChanged: false } },
    instructions: INSTRUCTIONS,
  });
  server.setRequestHandler("tools/list", async () => ({
    tools: TOOLS.filter((t) => toolset.includes(t)).map(listedTool) as ListToolsResult["tools"],
  }));
  server.setRequestHandler("tools/call", async (req): Promise<CallToolResult> => {
    const outcome = await callTool(TOOLS_BY_NAME, toolset, req.params.name, req.params.arguments, ctx);
    return outcome.ok ? toolResult(outcome.value) : toolError(outcome.error);
  });
  return server;
}

async function serveLegacy(server: Server, request: Request): Promise<Response> {
  const { request: normalized, sse } = negotiateResponseFormat(request);
  const transport = new WebStandardStreamableHTTPServerTransport({
    sessionIdGenerator: undefined,
    enableJsonResponse: !sse,
  });
  await server.connect(transport);
  return transport.handleRequest(normalized);
}

function toolResult(value: unknown): CallToolResult {
  const text = typeof value === "string" ? value : JSON.stringify(value);
  return { content: [{ type: "text", text }], structuredContent: structuredContent(value) };
}

/**
 * Tool errors are results with isError, so the agent can read and correct them. The error travels as
 * text only: a client validates `structuredContent` against the tool's success outputSchema, and the
 * SDK v1 client throws instead of returning the result when it does not match.
 */
function toolError(error: AppError): CallToolResult {
  return { isError: true, content: [{ type: "text", text: JSON.stringify(error.toJSON()) }] };
}

/**
 * The spec asks clients to accept both JSON and SSE. We answer SSE when the client lists
 * text/event-stream first (or only), JSON otherwise; a client that lists just one gets that one.
 */
function negotiateResponseFormat(request: Request): { request: Request; sse: boolean } {
  const accept = (request.headers.get("accept") ?? "").toLowerCase();
  const json = accept.indexOf("application/json");
  const stream = accept.indexOf("text/event-stream");
  const sse = stream !== -1 && (json === -1 || stream < json);
  if (json !== -1 && stream !== -1) return { request, sse };
  const headers = new Headers(request.headers);
  headers.set("accept", "application/json, text/event-stream");
  return { request: new Request(request, { headers }), sse };
}
