/** Renders a context and its related contexts for visualize_context. */

export interface ContextGraphEdge {
  from: string;
  to: string;
  type: string;
}

/**
 * A Mermaid flowchart. Context ids can hold any character, so nodes get generated ids (n0, n1, ...)
 * and the real id goes in a quoted label with quotes and angle brackets entity-escaped; relationship
 * types appear as edge labels.
 */
export function mermaidDiagram(root: string, nodes: string[], edges: ContextGraphEdge[]): string {
  const ids = new Map<string, string>();
  const nodeId = (context: string) => {
    let id = ids.get(context);
    if (!id) {
      id = `n${ids.size}`;
      ids.set(context, id);
    }
    return id;
  };
  const lines = ["graph TD;"];
  for (const context of [root, ...nodes.filter((n) => n !== root)])
    lines.push(`  ${nodeId(context)}["${escapeLabel(context)}"];`);
  for (const edge of edges) lines.push(`  ${nodeId(edge.from)} -->|${escapeLabel(edge.type)}| ${nodeId(edge.to)};`);
  return lines.join("\n");
}

export function escapeLabel(text: string): string {
  return text.replace(/[&"<>#|[\]{}()\\`;]/g, (c) => `#${c.charCodeAt(0)};`).replace(/[\r\n]+/g, " ");
}

export function contextText(view: {
  contextId: string;
  messageCount: number;
  hasSummary: boolean;
  summary: string | null;
  relatedContexts: string[];
}): string {
  const lines = [`Context ID: ${view.contextId}`, `Messages: ${view.messageCount}`, `Has Summary: ${view.hasSummary}`];
  if (view.summary) lines.push(`Summary: ${view.summary}`);
  if (view.relatedContexts.length > 0) lines.push(`Related Contexts: ${view.relatedContexts.join(", ")}`);
  return lines.join("\n");
}
