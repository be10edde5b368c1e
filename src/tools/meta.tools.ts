import { z } from "zod";
import { ANNOTATIONS, type AnyTool, defineTool } from "./define-tool";
import { getContextUsageStatistics, getToolConversations, getUsageReport } from "./meta-usage";

const ping = defineTool({
  name: "ping",
  category: "meta",
  core: true,
  title: "Ping",
  description: "Check that the server is reachable and your API key works. Returns the text 'pong'.",
  input: z.object({
    random_string: z.string().optional().describe("Ignored; lets clients that always send an argument call this tool."),
  }),
  output: z.literal("pong"),
  annotations: ANNOTATIONS.read,
  handler: async () => "pong" as const,
});

const listToolIdentifiers = defineTool({
  name: "list_tool_identifiers",
  category: "meta",
  core: true,
  title: "List tool identifiers",
  description:
    "List every tool this server offers, with its category and a one-line description, including tools outside " +
    "the toolsets enabled on this connection. A category is also a toolset: enable it with /mcp?toolsets=<category>.",
  input: z.object({}),
  output: z.object({
    success: z.literal(true),
    tools: z.array(z.object({ name: z.string(), category: z.string(), description: z.string() })),
    total_tools: z.number().int(),
    categories: z.array(z.string()),
  }),
  annotations: ANNOTATIONS.read,
  handler: async (_input, ctx) => {
    const tools = ctx.catalog.map((t) => ({
      name: t.name,
      category: t.category,
      description: firstSentence(t.description),
    }));
    return {
      success: true as const,
      tools,
      total_tools: tools.length,
      categories: [...new Set(tools.map((t) => t.category))],
    };
  },
});

function firstSentence(text: string): string {
  const end = text.search(/\.(\s|$)/);
  return end === -1 ? text : text.slice(0, end + 1);
}

const whoami = defineTool({
  name: "whoami",
  category: "meta",
  title: "Who am I",
  description:
    "What the key of this connection may do: its tenant, its key id, its scopes (read < write < admin) and the projects it is " +
    "limited to (null = every project of the tenant).",
  input: z.object({}),
  output: z.object({
    tenant_id: z.string(),
    key_id: z.string(),
    scopes: z.array(z.enum(["read", "write", "admin"])),
    projects: z.array(z.string()).nullable(),
  }),
  annotations: ANNOTATIONS.read,
  handler: async (_input, ctx) => ({
    tenant_id: ctx.caller.tenantId,
    key_id: ctx.caller.keyId,
    scopes: ctx.caller.scopes,
    projects: ctx.caller.projects,
  }),
});

/** Health, the tool list, the caller, and usage statistics. */
export const META_TOOLS: readonly AnyTool[] = [
  ping,
  listToolIdentifiers,
  whoami,
  getContextUsageStatistics,
  getToolConversations,
  getUsageReport,
];
