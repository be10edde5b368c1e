import { call, type TestTenant, waitForEmbeddings } from "../helpers";

/** Arguments that succeed for every tool, given the records `seedTenant` made; an error case is derived. */
export type ToolCases = Record<string, Record<string, unknown>>;

/** Calls that must come back as isError results (not client-side exceptions), with their error code. */
export const ERROR_CASES: { name: string; args: Record<string, unknown>; code: string }[] = [
  { name: "memory_store", args: { content: "" }, code: "INVALID_PARAMETER" },
  { name: "get_context", args: { chunk_id: 999_999 }, code: "NOT_FOUND" },
  { name: "retrieve_context", args: { contextId: "no-such-context" }, code: "NOT_FOUND" },
  { name: "memory_store", args: { content: "x", namespce: "p" }, code: "INVALID_PARAMETER" },
];

/** Tools whose result lists segments: at least one of them must carry a line_range (a former tuple). */
export const SEGMENT_LISTS: Record<string, string> = {
  context_get_working_set: "segments",
  context_get_task_context: "segments",
  context_search_stashed: "segments",
  context_retrieve_stashed: "retrieved_segments",
};

/**
 * Stores what the id-addressed tools need (documents, chunks, messages, conversations, segments with
 * line ranges in working and stashed storage) and returns valid arguments for every tool.
 */
export async function seedTenant(t: TestTenant): Promise<ToolCases> {
  const guide = await call(t.apiKey, "memory_ingest_document", {
    content: "# Guide\n\n## Install\n\nRun the installer.",
  });
  const doomedGuide = await call(t.apiKey, "memory_ingest_document", { content: "# Old guide\n\nTo be deleted." });
  const doc = await call(t.apiKey, "store_memory", {
    file_name: "auth.md",
    content: "JWT tokens are signed with RS256 and expire after one hour.",
  });
  const note = await call(t.apiKey, "store_memory", { file_name: "db.md", content: "The database is Postgres 15." });
  const throwaway = await call(t.apiKey, "memory_store", {
    content: "A throwaway note about the old build server",
    namespace: "p",
  });
  await waitForEmbeddings(t.tenantId);
  const chunks: number[] = (await call(t.apiKey, "search", { query: "JWT Postgres", mode: "keyword" })).results.map(
    (r: { chunk_id: number }) => r.chunk_id,
  );
  const message = await call(t.apiKey, "log_chat", {
    conversation_id: "session-1",
    role: "assistant",
    content: "Tokens use RS256 and expire hourly.",
  });
  await call(t.apiKey, "add_message", { contextId: "ctx-1", message: "We ship on Friday.", role: "user" });
  await call(t.apiKey, "add_message", { contextId: "ctx-2", message: "Friday release checklist.", role: "user" });
  await call(t.apiKey, "context_set_current_task", { project_id: "p", task_id: "t1" });
  for (const [path, line] of [
    ["src/a.ts", 3],
    ["src/b.ts", 7],
  ] as const) {
    await call(t.apiKey, "context_analyze_usage", {
      project_id: "p",
      context_descriptors: { current_file: { path, line, content: `export const x = ${line};` } },
    });
  }
  const segments: { segment_id: string; file_path: string | null }[] = (
    await call(t.apiKey, "context_get_working_set", { project_id: "p" })
  ).segments;
  const a = segments.find((s) => s.file_path === "src/a.ts")!.segment_id;
  const b = segments.find((s) => s.file_path === "src/b.ts")!.segment_id;
  await call(t.apiKey, "context_gc_prune", { project_id: "p", segment_ids: [b], action: "stash" });
  for (const file of ["/memories/seed/a.md", "/memories/seed/b.md"])
    await call(t.apiKey, "memory_files_create", { path: file, file_text: `Seed file ${file}\nsecond line` });

  return {
    ping: {},
    list_tool_identifiers: {},
    whoami: {},
    get_usage_report: { period: "week" },
    get_context_usage_statistics: {},
    get_tool_conversations: { tool_name: "search" },
    memory_store: { content: "The launch is on March 3rd.", namespace: "p", metadata: { source: "client test", n: 1 } },
    memory_batch_store: { memories: [{ content: "A batch memory" }], namespace: "p" },
    store_memory: { file_name: "notes.md", content: "Meeting notes." },
    search: { query: "JWT" },
    retrieve_by_type: { query: "JWT", doc_type: "document" },
    memory_list: { project: "p", include_stashed: true },
    memory_get: { id: doc.resource_id },
    memory_update: { id: note.resource_id, tags: ["db"], importance: 0.8 },
    memory_ingest: {
      conversation_id: "ingested",
      project_id: "p",
      messages: [
        { role: "user", content: "I moved to Lisbon last week.", speaker: "Ana", timestamp: "2024-03-08T10:00:00Z" },
        { role: "assistant", content: "How is Lisbon treating you?", timestamp: 1709892060000 },
      ],
    },
    memory_ingest_document: { content: "# Runbook\n\n## Failover\n\nPromote the replica.", file_name: "runbook.md" },
    memory_get_document: { document_id: guide.document_id, include_markdown: true },
    memory_list_documents: { limit: 10 },
    memory_delete_document: { document_id: doomedGuide.document_id },
    memory_profile: { project_id: "p" },
    memory_history: { conversation_id: "ctx-1" },
    memory_settings: { project_id: "p" },
    memory_reextract: { project_id: "p", conversation_id: "ingested", since: "2024-03-01T00:00:00Z" },
    // In the registry's order: view, create, str_replace, insert, delete, rename.
    memory_files_view: { path: "/memories" },
    memory_files_create: { path: "/memories/client.md", file_text: "Made by a client test." },
    memory_files_str_replace: { path: "/memories/seed/a.md", old_str: "second line", new_str: "edited line" },
    memory_files_insert: { path: "/memories/seed/a.md", insert_line: 1, insert_text: "inserted line" },
    memory_files_delete: { path: "/memories/seed/b.md" },
    memory_files_rename: { old_path: "/memories/seed/a.md", new_path: "/memories/seed/renamed.md" },
    build_context: { documents: [{ content: "First document." }, { content: "Second document.", id: 2 }] },
    memory_context_build: { query: "JWT tokens", token_budget: 500 },
    memory_cache_clear: {},
    memory_cache_stats: {},
    get_context: { chunk_id: chunks[0] },
    add_message: { contextId: "ctx-1", message: "And the release notes go out Monday.", role: "assistant" },
    log_chat: { conversation_id: "session-1", role: "user", content: "When do tokens expire?" },
    retrieve_context: { contextId: "ctx-1" },
    summarize_context: { contextId: "ctx-1" },
    get_similar_contexts: { query: "Friday release" },
    visualize_context: {},
    get_context_metrics: {},
    add_relationship: { sourceContextId: "ctx-1", targetContextId: "ctx-2", relationshipType: "references" },
    get_related_contexts: { contextId: "ctx-1" },
    link_resources: { source_id: doc.resource_id, target_id: note.resource_id, relationship_type: "references" },
    store_context_links: { message_id: message.message_id, chunk_ids: chunks },
    get_context_links_for_message: { message_id: message.message_id },
    get_messages_for_chunk: { chunk_id: chunks[0] },
    query_graph: { query: "JWT" },
    auto_link_documents: { document_id: doc.resource_id },
    get_document_relationships: { document_id: doc.resource_id },
    get_knowledge_graph: { max_nodes: 100 },
    context_analyze_usage: {
      project_id: "p",
      context_descriptors: JSON.stringify({ recent_messages: ["Where is x defined?"] }),
    },
    context_get_working_set: { project_id: "p", include_gc_candidates: true },
    context_gc_analyze: { project_id: "p" },
    context_gc_prune: { project_id: "p", segment_ids: [throwaway.id], action: "stash" },
    context_gc_pin: { project_id: "p", segment_ids: [a] },
    context_gc_unpin: { project_id: "p", segment_ids: [a] },
    context_stash: { project_id: "p", query: "checklist" },
    context_search_stashed: { project_id: "p", filters: { file_path: "src/b.ts" } },
    context_retrieve_stashed: { project_id: "p", filters: '{"file_path": "src/b.ts"}', move_to_active: true },
    context_list_projects: {},
    context_set_current_task: { project_id: "p", task_id: "t1" },
    context_get_task_context: { project_id: "p", task_id: "t1" },
    context_create_task_snapshot: { project_id: "p", task_id: "t1", name: "before lunch" },
  };
}
