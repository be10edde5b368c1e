// Vercel AI SDK: @ai-sdk/mcp's createMCPClient turns the server's tools into AI SDK tools. Hand `tools` to
// generateText/streamText({ model, tools }); here each tool's execute() is called as the SDK would call it.
import { createMCPClient } from "@ai-sdk/mcp";
import { FACT, firstText, QUERY, type RecipeOptions, type RecipeResult, resultTexts } from "./recipe";

export async function aiSdkRecipe({ url, apiKey, namespace }: RecipeOptions): Promise<RecipeResult> {
  const client = await createMCPClient({
    transport: { type: "http", url, headers: { Authorization: `Bearer ${apiKey}` } },
  });
  try {
    const tools = await client.tools();
    const call = (name: string, args: Record<string, unknown>) =>
      tools[name]!.execute!(args, { toolCallId: `call-${name}`, messages: [], context: {} });
    await call("memory_store", { content: FACT, namespace });
    const found = await call("search", { query: QUERY, project: namespace, limit: 3 });
    const refused = await call("memory_store", { content: "   ", namespace });
    return {
      framework: "@ai-sdk/mcp",
      tools: Object.keys(tools),
      found: resultTexts(found),
      error: firstText(refused),
    };
  } finally {
    await client.close();
  }
}
