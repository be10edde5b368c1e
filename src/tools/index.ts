import { buildContext, getContext, memoryCacheClear, memoryCacheStats, memoryContextBuild } from "./context.tools";
import { addMessage, getContextMetrics, logChat, retrieveContext, summarizeContext, visualizeContext } from "./conversation.tools";
import { GC_TOOLS } from "./gc.tools";
import {
  addRelationship,
  autoLinkDocuments,
  getContextLinksForMessage,
  getDocumentRelationships,
  getKnowledgeGraph,
  getMessagesForChunk,
  getRelatedContexts,
  linkResources,
  queryGraph,
  storeContextLinksTool,
} from "./graph.tools";
import { ITEM_TOOLS } from "./item.tools";
import { memoryBatchStore, memoryStore, storeMemory } from "./memory.tools";
import { MEMORY_FILE_TOOLS } from "./memory-files.tools";
import { listToolIdentifiers, ping, whoami } from "./meta.tools";
import type { AnyTool } from "./registry";
import { getSimilarContexts, retrieveByType, search } from "./search.tools";
import { getContextUsageStatistics, getToolConversations, getUsageReport } from "./usage.tools";

/** The registry: every tool the server has, declared once. Adding a tool is adding it here. */
export const TOOLS: readonly AnyTool[] = [
  // meta
  ping,
  listToolIdentifiers,
  whoami,
  getContextUsageStatistics,
  getToolConversations,
  getUsageReport,
  // memory: store and search
  memoryStore,
  memoryBatchStore,
  storeMemory,
  search,
  retrieveByType,
  // memory: browse and correct one item
  ...ITEM_TOOLS,
  // memory files: the backend of Anthropic's memory tool
  ...MEMORY_FILE_TOOLS,
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
  getKnowledgeGraph,
  // working set, GC, stash, tasks
  ...GC_TOOLS,
];

export const TOOLS_BY_NAME: ReadonlyMap<string, AnyTool> = new Map(TOOLS.map((t) => [t.name, t]));
