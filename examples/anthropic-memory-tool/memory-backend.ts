// Claude's memory tool (memory_20250818), stored in Context Edge: the Anthropic SDK's MemoryToolHandlers, each
// command forwarded as it comes to the server's memory_files_* tool over MCP. Claude's files then live per tenant
// and namespace on the server, as memories that search finds like any other.
import type { MemoryToolHandlers } from "@anthropic-ai/sdk/helpers/beta/memory";
import type { BetaMemoryTool20250818Command } from "@anthropic-ai/sdk/resources/beta";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

export interface ContextEdgeMemory {
  handlers: MemoryToolHandlers;
  close(): Promise<void>;
}

/** Connects to the server's MCP endpoint (`url` ends in /mcp) with an API key that has the write scope. */
export async function contextEdgeMemory(options: {
  url: string;
  apiKey: string;
  namespace?: string;
}): Promise<ContextEdgeMemory> {
  const client = new Client({ name: "claude-memory-tool", version: "1.0.0" });
  const endpoint = new URL(options.url);
  endpoint.searchParams.set("toolsets", "memory_files");
  await client.connect(
    new StreamableHTTPClientTransport(endpoint, {
      requestInit: { headers: { authorization: `Bearer ${options.apiKey}` } },
    }),
  );
  /** One command: its arguments as Claude sent them; the server's answer, or its error message thrown (the SDK returns it to Claude as is_error). */
  const run = async ({ command, ...args }: BetaMemoryTool20250818Command): Promise<string> => {
    const result = await client.callTool({
      name: `memory_files_${command}`,
      arguments: { ...args, ...(options.namespace ? { namespace: options.namespace } : {}) },
    });
    const structured = result.structuredContent as { output?: string; error?: { message: string } } | undefined;
    if (result.isError) {
      const text = (result.content as { text?: string }[])[0]?.text ?? "";
      let message = text;
      try {
        message = (JSON.parse(text) as { error?: { message?: string } }).error?.message ?? text;
      } catch {}
      throw new Error(message);
    }
    return structured?.output ?? "";
  };
  return {
    handlers: { view: run, create: run, str_replace: run, insert: run, delete: run, rename: run },
    close: () => client.close(),
  };
}
