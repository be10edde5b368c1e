import { buildContext, getContext, memoryCacheClear, memoryCacheStats, memoryContextBuild } from "./context.tools";
import { linkResources } from "./graph.tools";
import { addMessage, logChat, memoryBatchStore, memoryStore, storeMemory } from "./memory.tools";
import { listToolIdentifiers, ping } from "./meta.tools";
import type { AnyTool } from "./registry";
import { getSimilarContexts, retrieveByType, search } from "./search.tools";

/** The registry: every tool the server has, declared once. Adding a tool is adding it here. */
export const TOOLS: readonly AnyTool[] = [
  ping,
  listToolIdentifiers,
  memoryStore,
  memoryBatchStore,
  storeMemory,
  search,
  retrieveByType,
  addMessage,
  logChat,
  getSimilarContexts,
  buildContext,
  memoryContextBuild,
  memoryCacheClear,
  memoryCacheStats,
  getContext,
  linkResources,
];

export const TOOLS_BY_NAME: ReadonlyMap<string, AnyTool> = new Map(TOOLS.map((t) => [t.name, t]));
