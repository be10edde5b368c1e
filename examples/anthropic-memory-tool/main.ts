// A Claude agent whose memory tool is backed by Context Edge. Run it with:
//   ANTHROPIC_API_KEY=... CONTEXT_EDGE_URL=http://localhost:8787/mcp CONTEXT_EDGE_KEY=<key> \
//     npx tsx examples/anthropic-memory-tool/main.ts "Remember that Acme Corp prefers email follow-ups."
// (`npm run dev` prints a key; CONTEXT_EDGE_NAMESPACE picks the namespace, default 'default'.)
import Anthropic from "@anthropic-ai/sdk";
import { betaMemoryTool } from "@anthropic-ai/sdk/helpers/beta/memory";
import { contextEdgeMemory } from "./memory-backend";

const memory = await contextEdgeMemory({
  url: process.env.CONTEXT_EDGE_URL ?? "http://localhost:8787/mcp",
  apiKey: process.env.CONTEXT_EDGE_KEY ?? "ce_dev_local_only_0000000000000000000000000",
  namespace: process.env.CONTEXT_EDGE_NAMESPACE,
});
try {
  const runner = new Anthropic().beta.messages.toolRunner({
    model: process.env.ANTHROPIC_MODEL ?? "claude-sonnet-4-5",
    max_tokens: 1024,
    messages: [{ role: "user", content: process.argv[2] ?? "What do you remember about me?" }],
    tools: [betaMemoryTool(memory.handlers)],
    max_iterations: 10,
  });
  const final = await runner;
  for (const block of final.content) if (block.type === "text") console.log(block.text);
} finally {
  await memory.close();
}
