// What each framework recipe shows, through that framework's own MCP client: the tools it lists, a memory stored,
// found again by search, and a tool error as the agent receives it. Each recipe returns this; the tests compare.
export interface RecipeResult {
  framework: string;
  tools: string[];
  /** What the stored memory's search answered (its text). */
  found: string[];
  /**
   * The error text the framework hands the agent for a call the server refuses: memory_store of blank content
   * (its schema accepts it, so the server's own error comes back, not a client-side check).
   */
  error: string;
}

export interface RecipeOptions {
  /** The server's MCP URL, e.g. http://localhost:8787/mcp. */
  url: string;
  apiKey: string;
  /** A namespace of its own, so the recipe's memory is found, not someone else's. */
  namespace: string;
}

export const FACT = "The Context Edge recipes store this fact: the harbour lighthouse is repainted every spring.";
export const QUERY = "When is the harbour lighthouse repainted?";

/** Texts of a search result as the server answers it (structured or JSON text). */
export function resultTexts(result: unknown): string[] {
  const value = result as {
    structuredContent?: { results?: { content: string }[] };
    content?: { type: string; text?: string }[];
    results?: { content: string }[];
  };
  const structured = value.structuredContent ?? value;
  if (Array.isArray((structured as { results?: unknown }).results))
    return (structured as { results: { content: string }[] }).results.map((r) => r.content);
  const text = value.content?.find((c) => c.type === "text")?.text;
  return text ? ((JSON.parse(text) as { results?: { content: string }[] }).results ?? []).map((r) => r.content) : [];
}

/** The text of an MCP tool result (its first text block). */
export function firstText(result: unknown): string {
  const content = (result as { content?: { type: string; text?: string }[] }).content ?? [];
  return content.find((c) => c.type === "text")?.text ?? JSON.stringify(result);
}
