import { describe, expect, it } from "vitest";
import { aiSdkRecipe } from "../../../examples/frameworks/ai-sdk";
import { langChainRecipe } from "../../../examples/frameworks/langchain";
import { mastraRecipe } from "../../../examples/frameworks/mastra";
import { openAiAgentsRecipe } from "../../../examples/frameworks/openai-agents";
import { FACT, type RecipeOptions, type RecipeResult } from "../../../examples/frameworks/recipe";
import { devSecrets } from "../../fixtures/dev-server";

// examples/frameworks: each agent framework's own MCP client against `npm run dev`: it lists every tool, stores a
// memory, finds it by search, and hands the agent the server's error for a refused call. No model is called.

const RECIPES: Record<string, (options: RecipeOptions) => Promise<RecipeResult>> = {
  "Vercel AI SDK (@ai-sdk/mcp)": aiSdkRecipe,
  "OpenAI Agents SDK (@openai/agents)": openAiAgentsRecipe,
  "LangChain (@langchain/mcp-adapters)": langChainRecipe,
  "Mastra (@mastra/mcp)": mastraRecipe,
};

/** The framework recipes' cases, against the dev server at `url()` (test/node/dev-server.test.ts starts it). */
export function frameworkCases(url: () => string) {
  describe("agent frameworks through their own MCP clients (examples/frameworks)", () => {
    for (const [label, recipe] of Object.entries(RECIPES)) {
      it(label, { timeout: 60_000 }, async () => {
        const listed = await fetch(`${url()}/jsonrpc`, {
          method: "POST",
          headers: { authorization: `Bearer ${devSecrets().key}`, "content-type": "application/json" },
          body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/list" }),
        }).then((r) => r.json() as Promise<{ result: { tools: { name: string }[] } }>);
        const namespace = `recipe-${label.replace(/\W+/g, "-").toLowerCase()}-${Date.now().toString(36)}`;
        const result = await recipe({ url: `${url()}/mcp?toolsets=all`, apiKey: devSecrets().key, namespace });
        expect(result.tools.sort()).toEqual(listed.result.tools.map((t) => t.name).sort());
        expect(result.found[0]).toBe(FACT);
        expect(result.error).toContain("INVALID_PARAMETER");
        expect(result.error).toContain("content");
      });
    }
  });
}
