// LangChain: @langchain/mcp-adapters' MultiServerMCPClient gives LangChain tools (for createAgent / a LangGraph
// ReAct agent); here each tool's invoke() is called as the agent would call it.
import { MultiServerMCPClient } from "@langchain/mcp-adapters";
import { FACT, QUERY, type RecipeOptions, type RecipeResult, resultTexts } from "./recipe";

export async function langChainRecipe({ url, apiKey, namespace }: RecipeOptions): Promise<RecipeResult> {
  const client = new MultiServerMCPClient({
    mcpServers: { "context-edge": { transport: "http", url, headers: { Authorization: `Bearer ${apiKey}` } } },
  });
  try {
    const tools = await client.getTools();
    const tool = (name: string) => tools.find((t) => t.name === name)!;
    await tool("memory_store").invoke({ content: FACT, namespace });
    // A result with structured content comes as a text block carrying it; a plain one as its text.
    const answer: unknown = await tool("search").invoke({ query: QUERY, project: namespace, limit: 3 });
    const found = resultTexts(typeof answer === "string" ? { content: [{ type: "text", text: answer }] } : answer);
    let error = "";
    try {
      error = String(await tool("memory_store").invoke({ content: "   ", namespace }));
    } catch (refusal) {
      error = (refusal as Error).message; // a ToolException: LangChain's agents hand it to the model as the tool's result
    }
    return { framework: "@langchain/mcp-adapters", tools: tools.map((t) => t.name), found, error };
  } finally {
    await client.close();
  }
}
