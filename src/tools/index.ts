import { buildContext, getContext, memoryCacheClear, memoryCacheStats, memoryContextBuild } from "./context.tools";
import { addMessage, getContextMetrics, logChat, retrieveContext, summarizeContext, visualizeContext } from "./conversation.tools";
import { GC_TOOLS } from "./gc.tools";
import {
  addRelationship,
  autoLinkDocuments,
  getContextLinksForMessage,
  getDocumentRelationships,
  getMessagesForChunk,
  getRelatedContexts,
  linkResources,
  queryGraph,
  storeContextLinksTool,
} from "./graph.tools";
import { memoryBatchStore, memoryStore, storeMemory } from "./memory.tools";
import { listToolIdentifiers, ping } from "./meta.tools";
import type { AnyTool } from "./registry";
import { getSimilarContexts, retrieveByType, search } from "./search.tools";
import { getContextUsageStatistics, getToolConversations } from "./usage.tools";

/** The registry: every tool the server has, declared once. Adding a tool is adding it here. */
export const TOOLS: readonly AnyTool[] = [
  // meta
  ping,
  listToolIdentifiers,
  getContextUsageStatistics,
  getToolConversations,
  // memory: store and search
  memoryStore,
  memoryBatchStore,
  storeMemory,
  search,
  retrieveByType,
  // context building
  buildContext,
  memoryContextBuild,
  memoryCacheClear,
  memoryCacheStats,
  getContext,
  // conversations
  addMessage,
  logChat,
  retrieveContext,
  summarizeContext,
  getSimilarContexts,
  visualizeContext,
  getContextMetrics,
  // graph
  addRelationship,
  getRelatedContexts,
  linkResources,
  storeContextLinksTool,
  getContextLinksForMessage,
  getMessagesForChunk,
  queryGraph,
  autoLinkDocuments,
  getDocumentRelationships,
  // working set, GC, stash, tasks
  ...GC_TOOLS,
];

export const TOOLS_BY_NAME: ReadonlyMap<string, AnyTool> = new Map(TOOLS.map((t) => [t.name, t]));
