// A Cloudflare Agents SDK Agent with Context Edge as its memory: the Agent adds the server with addMcpServer
// (streamable HTTP, the API key in an Authorization header, so no OAuth round trip), and its tools reach a model
// through this.mcp.getAITools() (AI SDK tools: generateText({ model, tools: this.mcp.getAITools() })).
//
// POST /agents/memory-agent/<name> runs what an agent would do and answers JSON: the tools it sees, a memory
// stored and found again by search, and the server's error for a call it refuses, as the AI SDK hands it to the
// model. Each agent instance remembers in the namespace named after it. No model is called.
import { Agent, routeAgentRequest } from "agents";
import { type AgentRun, FACT, QUERY } from "./run";

export interface Env {
  MemoryAgent: DurableObjectNamespace<MemoryAgent>;
  /** Context Edge's MCP URL, e.g. https://context-edge.<subdomain>.workers.dev/mcp?toolsets=all. */
  CONTEXT_EDGE_URL: string;
  /** A Context Edge API key (a secret). */
  CONTEXT_EDGE_KEY: string;
}

export class MemoryAgent extends Agent<Env> {
  override async onRequest(request: Request): Promise<Response> {
    if (request.method !== "POST") return new Response("POST to run the agent", { status: 405 });
    if (!this.env.CONTEXT_EDGE_KEY) return Response.json({ error: "CONTEXT_EDGE_KEY is not set" }, { status: 500 });
    // Idempotent for the same name and URL: a restarted agent reuses its stored connection.
    const added = await this.addMcpServer("context-edge", this.env.CONTEXT_EDGE_URL, {
      transport: { type: "streamable-http", headers: { Authorization: `Bearer ${this.env.CONTEXT_EDGE_KEY}` } },
    });
    if (added.state !== "ready")
      return Response.json({ error: `addMcpServer answered ${added.state}`, added }, { status: 502 });
    const serverId = added.id;

    const tools = this.mcp
      .listTools()
      .filter((t) => t.serverId === serverId)
      .map((t) => t.name);
    // What a model gets: AI SDK tools keyed tool_<serverId>_<name>; execute() is what the AI SDK calls.
    const aiTools = this.mcp.getAITools({ serverId });
    const prefix = `tool_${serverId.replace(/-/g, "")}_`;
    const tool = (name: string) => {
      const found = aiTools[`${prefix}${name}`];
      if (!found) throw new Error(`the agent has no tool ${name}`);
      return found as unknown as { execute: (args: Record<string, unknown>) => Promise<unknown> };
    };

    const namespace = this.name;
    const stored = await tool("memory_store").execute({ content: FACT, namespace });
    const found = resultTexts(await tool("search").execute({ query: QUERY, project: namespace, limit: 3 }));
    // A refused call: the server answers isError with its JSON error; getAITools' execute throws it, and the AI
    // SDK gives the model that message as the tool's error.
    const error = await tool("memory_store")
      .execute({ content: "   ", namespace })
      .then(
        (result) => `no error: ${JSON.stringify(result)}`,
        (e: unknown) => (e instanceof Error ? e.message : String(e)),
      );

    const run: AgentRun = {
      state: added.state,
      tools,
      aiTools: Object.keys(aiTools).map((key) => key.slice(prefix.length)),
      stored: structured(stored),
      found,
      error,
    };
    return Response.json(run);
  }
}

/** A tool result's structured content, else its first text block's JSON. */
function structured(result: unknown): unknown {
  const value = result as { structuredContent?: unknown; content?: { type: string; text?: string }[] };
  if (value.structuredContent) return value.structuredContent;
  const text = value.content?.find((c) => c.type === "text")?.text;
  return text ? JSON.parse(text) : value;
}

function resultTexts(result: unknown): string[] {
  return ((structured(result) as { results?: { content: string }[] }).results ?? []).map((r) => r.content);
}

export default {
  async fetch(request: Request, env: Env): Promise<Response> {
    return (
      (await routeAgentRequest(request, env)) ??
      new Response("Not found: POST /agents/memory-agent/<name>", { status: 404 })
    );
  },
} satisfies ExportedHandler<Env>;
