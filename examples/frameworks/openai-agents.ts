// OpenAI Agents SDK: MCPServerStreamableHttp connects an Agent to the server (new Agent({ mcpServers: [server] }));
// here the server object's own listTools/callTool, which the agent runner uses, are called directly.
import { MCPServerStreamableHttp } from "@openai/agents";
import { FACT, firstText, QUERY, type RecipeOptions, type RecipeResult, resultTexts } from "./recipe";

export async function openAiAgentsRecipe({ url, apiKey, namespace }: RecipeOptions): Promise<RecipeResult> {
  const server = new MCPServerStreamableHttp({
    url,
    name: "context-edge",
    requestInit: { headers: { Authorization: `Bearer ${apiKey}` } },
  });
  await server.connect();
  try {
    const tools = await server.listTools();
    await server.callTool("memory_store", { content: FACT, namespace });
    const found = await server.callTool("search", { query: QUERY, project: namespace, limit: 3 });
    const refused = await server.callTool("memory_store", { content: "   ", namespace });
    return {
      framework: "@openai/agents",
      tools: tools.map((t) => t.name),
      found: resultTexts({ content: found }),
      error: firstText({ content: refused }),
    };
  } finally {
    await server.close();
  }
}
