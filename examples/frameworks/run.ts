// Runs the framework recipes against a server and prints what each framework's MCP client saw:
//   npx tsx examples/frameworks/run.ts [ai-sdk|openai-agents|langchain|mastra ...]
// CONTEXT_EDGE_URL (default http://localhost:8787/mcp?toolsets=all) and CONTEXT_EDGE_KEY (default the dev key).
import { aiSdkRecipe } from "./ai-sdk";
import { langChainRecipe } from "./langchain";
import { mastraRecipe } from "./mastra";
import { openAiAgentsRecipe } from "./openai-agents";
import type { RecipeOptions, RecipeResult } from "./recipe";

const RECIPES: Record<string, (options: RecipeOptions) => Promise<RecipeResult>> = {
  "ai-sdk": aiSdkRecipe,
  "openai-agents": openAiAgentsRecipe,
  langchain: langChainRecipe,
  mastra: mastraRecipe,
};

const chosen = process.argv.slice(2).length > 0 ? process.argv.slice(2) : Object.keys(RECIPES);
for (const name of chosen) {
  const recipe = RECIPES[name];
  if (!recipe) throw new Error(`unknown recipe '${name}' (have: ${Object.keys(RECIPES).join(", ")})`);
  const result = await recipe({
    url: process.env.CONTEXT_EDGE_URL ?? "http://localhost:8787/mcp?toolsets=all",
    apiKey: process.env.CONTEXT_EDGE_KEY ?? "ce_dev_local_only_0000000000000000000000000",
    namespace: `recipe-${name}`,
  });
  console.log(
    `${result.framework}: ${result.tools.length} tools; search found: ${JSON.stringify(result.found[0])}; the agent's error: ${result.error.slice(0, 160)}`,
  );
}
