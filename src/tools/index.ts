import { CONTEXT_TOOLS } from "./context.tools";
import { CONVERSATION_TOOLS } from "./conversation.tools";
import type { AnyTool } from "./define-tool";
import { GC_TOOLS } from "./gc.tools";
import { GRAPH_TOOLS } from "./graph.tools";
import { MEMORY_TOOLS } from "./memory.tools";
import { MEMORY_FILES_TOOLS } from "./memory-files.tools";
import { META_TOOLS } from "./meta.tools";

/**
 * The registry: every tool the server has, declared once, in the order tools/list gives them. Each category's
 * file (`<category>.tools.ts`) exports one array; adding a tool is adding it to its category's array.
 */
export const TOOLS: readonly AnyTool[] = [
  ...META_TOOLS,
  ...MEMORY_TOOLS,
  ...MEMORY_FILES_TOOLS,
  ...CONTEXT_TOOLS,
  ...CONVERSATION_TOOLS,
  ...GRAPH_TOOLS,
  ...GC_TOOLS,
];

export const TOOLS_BY_NAME: ReadonlyMap<string, AnyTool> = new Map(TOOLS.map((t) => [t.name, t]));
