// Mastra: @mastra/mcp's MCPClient gives Mastra tools named <server>_<tool> (for new Agent({ tools: await
// mcp.listTools() })); here each tool's execute() is called as the agent would call it.
import { MCPClient } from "@mastra/mcp";
import { FACT, QUERY, type RecipeOptions, type RecipeResult, resultTexts } from "./recipe";

export async function mastraRecipe({ url, apiKey, namespace }: RecipeOptions): Promise<RecipeResult> {
  const mcp = new MCPClient({
    id: `context-edge-${namespace}`,
    servers: { contextEdge: { url: new URL(url), requestInit: { headers: { Authorization: `Bearer ${apiKey}` } } } },
  });
  try {
    const tools = await mcp.listTools();
    const prefix = "contextEdge_";
    const call = (name: string, args: Record<string, unknown>) =>
      tools[`${prefix}${name}`]!.execute!(args, {} as never);
    await call("memory_store", { content: FACT, namespace });
    const found = await call("search", { query: QUERY, project: namespace, limit: 3 });
    let error = "";
    try {
      await call("memory_store", { content: "   ", namespace });
    } catch (refusal) {
      error = (refusal as Error).message; // Mastra raises the server's error; its agents hand it to the model
    }
    return {
      framework: "@mastra/mcp",
      tools: Object.keys(tools).map((name) => name.slice(prefix.length)),
      found: resultTexts(found),
      error,
    };
  } finally {
    await mcp.disconnect();
  }
}
