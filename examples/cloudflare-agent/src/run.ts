// What the example agent does and answers, shared by the Worker (src/index.ts) and the tests that drive it
// (test/node/dev-server/cloudflare-agent-cases.ts). A Worker's main module may export only handlers and classes.

export const FACT = "The Cloudflare agent stores this fact: the night ferry leaves the east pier at 23:40.";
export const QUERY = "When does the night ferry leave?";

/** What one run saw, as POST /agents/memory-agent/<name> answers it. */
export interface AgentRun {
  /** addMcpServer's result: "ready" (a key needs no OAuth; "authenticating" would carry an authUrl). */
  state: string;
  /** The tools the agent's MCP client lists (this.mcp.listTools()). */
  tools: string[];
  /** The names of the AI SDK tools the agent hands a model (getAITools() skips a tool whose schema it cannot convert). */
  aiTools: string[];
  /** memory_store's answer. */
  stored: unknown;
  /** The texts search found. */
  found: string[];
  /** The error a refused call (memory_store of blank content) raises in the tool's execute, as the model gets it. */
  error: string;
}
