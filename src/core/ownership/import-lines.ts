import { z } from "zod";
import { AppError } from "../../errors";
import { ITEM_TYPES, MAX_ITEM_CHARS } from "../memory/item-types";
import { EXPORT_FORMAT, IMPORT_VERSIONS } from "./export-records";
import {
  conversationRecord,
  documentRecord,
  extractionWindowRecord,
  type ImportFormat,
  type ImportRecords,
  type ItemRecord,
  itemRecord,
  linkRecord,
  memoryEventRecord,
  projectSettingsRecord,
  projectTaskRecord,
  summaryRecord,
} from "./import-schemas";

/** A file that cannot be imported: the line (1-based) and why. Nothing is written. */
export function badLine(line: number, reason: string): AppError {
  return new AppError("INVALID_PARAMETER", `Line ${line}: ${reason}`, { parameter: "body", line });
}

/**
 * Reads an import body: our NDJSON export, the MCP reference memory server's JSONL (entities and
 * relations) or a mem0 export (a JSON list), detected from the content unless `format` says.
 * Every line is checked before anything is written.
 */
export function parseImport(text: string, format?: ImportFormat): ImportRecords {
  const detected = format ?? detectFormat(text);
  if (detected === "mem0") return fromMem0(text);
  const lines = ndjsonLines(text);
  if (detected === "mcp-memory") return fromMcpMemory(lines);
  return fromExport(lines);
}

function detectFormat(text: string): ImportFormat {
  const start = text.trimStart();
  if (start.startsWith("[")) return "mem0";
  if (start.startsWith("{")) {
    const firstLine = start.split("\n", 1)[0]!;
    try {
      const first = JSON.parse(firstLine) as Record<string, unknown>;
      if (first.type === "entity" || first.type === "relation") return "mcp-memory";
      if (first.type === "header") return "context-edge";
    } catch {
      // a JSON document over several lines: mem0's {"results": [...]}
    }
    if (!start.includes("\n") || /^\{\s*"results"/.test(start)) return "mem0";
  }
  return "context-edge";
}

/** Non-empty lines parsed as JSON, with their 1-based line numbers. */
export function ndjsonLines(text: string): { line: number; value: unknown }[] {
  const out: { line: number; value: unknown }[] = [];
  text.split("\n").forEach((raw, i) => {
    if (raw.trim() === "") return;
    try {
      out.push({ line: i + 1, value: JSON.parse(raw) });
    } catch {
      throw badLine(i + 1, "not valid JSON");
    }
  });
  return out;
}

function fromExport(lines: { line: number; value: unknown }[]): ImportRecords {
  const header = lines[0];
  const head = header?.value as Record<string, unknown> | undefined;
  if (!header || head?.type !== "header" || head.format !== EXPORT_FORMAT) {
    throw badLine(
      header?.line ?? 1,
      `the first line must be the header {"type":"header","format":"${EXPORT_FORMAT}",...}`,
    );
  }
  if (!IMPORT_VERSIONS.includes(head.version as number))
    throw badLine(
      header.line,
      `export version ${String(head.version)} is not supported (this server reads versions ${IMPORT_VERSIONS.slice(0, -1).join(", ")} and ${IMPORT_VERSIONS.at(-1)})`,
    );
  const records = emptyRecords("context-edge");
  for (const { line, value } of lines.slice(1)) {
    const type = (value as { type?: unknown } | null)?.type;
    switch (type) {
      case "item": {
        // The item's own "type" (note, message, ...) travels as `item_type`: `type` names the record.
        const { item_type, ...rest } = (value ?? {}) as Record<string, unknown>;
        const parsed = check(itemRecord, rest, line);
        const itemType = z.enum(ITEM_TYPES).safeParse(item_type);
        if (!itemType.success) throw badLine(line, `item_type must be one of ${ITEM_TYPES.join(", ")}`);
        records.items.push({ ...parsed, item_type: itemType.data, line });
        break;
      }
      case "conversation":
        records.conversations.push(check(conversationRecord, value, line));
        break;
      case "summary":
        records.summaries.push(check(summaryRecord, value, line));
        break;
      case "project_task":
        records.projectTasks.push(check(projectTaskRecord, value, line));
        break;
      case "link":
        records.links.push(check(linkRecord, value, line));
        break;
      case "project_settings":
        records.projectSettings.push({ ...check(projectSettingsRecord, value, line), line });
        break;
      case "extraction_window":
        records.extractionWindows.push({ ...check(extractionWindowRecord, value, line), line });
        break;
      case "memory_event":
        records.memoryEvents.push({ ...check(memoryEventRecord, value, line), line });
        break;
      case "document":
        records.documents.push({ ...check(documentRecord, value, line), line });
        break;
      default:
        throw badLine(
          line,
          `unknown record type ${JSON.stringify(type)} (expected item, conversation, summary, project_task, link, project_settings, extraction_window, memory_event or document)`,
        );
    }
  }
  checkReferences(records);
  return records;
}

/**
 * Cross-record rules: a message, window or event names a conversation of its own project; ids are unique. A derived
 * memory's sources and an event's items are not required in the file: they may name items deleted since (the event
 * log is kept, as in the tenant the file comes from).
 */
export function checkReferences(records: ImportRecords): void {
  const conversations = new Map(records.conversations.map((c) => [c.id, c]));
  const sameProject = (what: string, line: number, project: string, conversationId: string | null) => {
    const conversation = conversationId === null ? undefined : conversations.get(conversationId);
    if (conversation && conversation.project !== project) {
      throw badLine(
        line,
        `${what} of conversation '${conversationId}' is in project '${project}' but the conversation is in '${conversation.project}'`,
      );
    }
  };
  const unique = (what: string) => {
    const seen = new Set<string>();
    return (id: string, line: number) => {
      if (seen.has(id)) throw badLine(line, `${what} '${id}' appears twice`);
      seen.add(id);
    };
  };
  const documentId = unique("document id");
  const documents = new Map(records.documents.map((d) => [d.id, d]));
  for (const document of records.documents) documentId(document.id, document.line);
  const itemId = unique("item id");
  for (const item of records.items) {
    itemId(item.id, item.line);
    sameProject("message", item.line, item.project, item.conversation_id);
    if (item.document_id === undefined) continue;
    const document = documents.get(item.document_id);
    if (!document) throw badLine(item.line, `document_id '${item.document_id}' names no document record of the file`);
    if (document.project !== item.project)
      throw badLine(
        item.line,
        `a chunk of document '${document.id}' is in project '${item.project}' but the document is in '${document.project}'`,
      );
  }
  const settingsOf = unique("project_settings of project");
  for (const settings of records.projectSettings) settingsOf(settings.project, settings.line);
  const windowId = unique("extraction_window id");
  for (const window of records.extractionWindows) {
    windowId(window.id, window.line);
    sameProject("extraction_window", window.line, window.project, window.conversation_id);
  }
  const eventId = unique("memory_event id");
  for (const event of records.memoryEvents) {
    eventId(event.id, event.line);
    sameProject("memory_event", event.line, event.project, event.conversation_id);
  }
}

export function check<T extends z.ZodType>(schema: T, value: unknown, line: number): z.output<T> {
  const parsed = schema.safeParse(value);
  if (parsed.success) return parsed.data;
  const issue = parsed.error.issues[0]!;
  const field = issue.path.length > 0 ? `${issue.path.join(".")}: ` : "";
  throw badLine(line, `${field}${issue.message}`);
}

/**
 * Other memory servers' exports as our records. Each becomes memories in the import's project
 * (`?project=`, else "default"); ids derive from the source's own ids, so importing the same file
 * again adds nothing.
 */

const DEFAULT_PROJECT = "default";

function memory(id: string, content: string, line: number, fields: Partial<ItemRecord> = {}): ItemRecord {
  const now = Date.now();
  return {
    type: "item",
    id,
    project: DEFAULT_PROJECT,
    kind: "memory",
    item_type: "note",
    conversation_id: null,
    position: null,
    role: null,
    content,
    tags: [],
    importance: 0.5,
    metadata: {},
    tier: "active",
    pinned: false,
    task_id: null,
    file_path: null,
    line_start: null,
    line_end: null,
    key: null,
    superseded_by: null,
    generation: "young",
    gc_survival_count: 0,
    created_at: now,
    valid_from: null,
    valid_to: null,
    memory_kind: null,
    line,
    ...fields,
  };
}

const emptyRecords = (format: ImportRecords["format"]): ImportRecords => ({
  format,
  conversations: [],
  items: [],
  summaries: [],
  projectTasks: [],
  links: [],
  projectSettings: [],
  extractionWindows: [],
  memoryEvents: [],
  documents: [],
});

/**
 * The MCP reference "memory" server (@modelcontextprotocol/server-memory) keeps a knowledge graph as
 * JSONL: entities with observations, relations between entity names. An entity becomes one memory
 * (its name, type and observations; tagged with its type; keyed `entity:<name>`), a relation a link.
 */
const entityLine = z.object({
  type: z.literal("entity"),
  name: z.string().min(1).max(200),
  entityType: z.string().min(1).max(100),
  observations: z.array(z.string().max(10_000)).max(1000).default([]),
});
const relationLine = z.object({
  type: z.literal("relation"),
  from: z.string().min(1).max(200),
  to: z.string().min(1).max(200),
  relationType: z.string().min(1).max(100),
});

export function fromMcpMemory(lines: { line: number; value: unknown }[]): ImportRecords {
  const records = emptyRecords("mcp-memory");
  const entities = new Map<string, string>();
  const relations: { line: number; relation: z.output<typeof relationLine> }[] = [];
  for (const { line, value } of lines) {
    const type = (value as { type?: unknown } | null)?.type;
    if (type === "entity") {
      const entity = check(entityLine, value, line);
      if (entities.has(entity.name)) throw badLine(line, `entity '${entity.name}' appears twice`);
      const content = [`${entity.name} (${entity.entityType})`, ...entity.observations.map((o) => `- ${o}`)].join("\n");
      if (content.length > MAX_ITEM_CHARS)
        throw badLine(
          line,
          `entity '${entity.name}' is ${content.length} characters with its observations; the limit is ${MAX_ITEM_CHARS}`,
        );
      const id = `mcp-entity:${entity.name}`;
      entities.set(entity.name, id);
      records.items.push(
        memory(id, content, line, {
          tags: [entity.entityType.slice(0, 100)],
          key: `entity:${entity.name}`,
          metadata: {
            source: "mcp-memory",
            entity: entity.name,
            entity_type: entity.entityType,
            observations: entity.observations,
          },
        }),
      );
    } else if (type === "relation") {
      relations.push({ line, relation: check(relationLine, value, line) });
    } else {
      throw badLine(line, `expected an entity or a relation (type ${JSON.stringify(type)})`);
    }
  }
  for (const { line, relation } of relations) {
    const source = entities.get(relation.from);
    const target = entities.get(relation.to);
    if (!source || !target)
      throw badLine(
        line,
        `relation names entity '${!source ? relation.from : relation.to}', which the file does not define`,
      );
    records.links.push({
      type: "link",
      id: `mcp-relation:${JSON.stringify([relation.from, relation.relationType, relation.to])}`,
      source_type: "item",
      source_id: source,
      target_type: "item",
      target_id: target,
      relationship_type: relation.relationType,
      weight: 1,
      metadata: { source: "mcp-memory" },
      created_at: Date.now(),
    });
  }
  return records;
}

/**
 * A mem0 export: a JSON list of memories (or `{"results": [...]}`, as mem0's get_all answers), each
 * `{id, memory, user_id?, agent_id?, metadata?, categories?, created_at?, updated_at?}`. A memory keeps its
 * text, times, metadata (with mem0's ids) and categories as tags. Records are numbered from 1 in errors.
 */
const mem0Memory = z.object({
  id: z.union([z.string().min(1).max(200), z.number()]),
  memory: z.string().min(1).max(MAX_ITEM_CHARS),
  user_id: z.string().max(200).nullish(),
  agent_id: z.string().max(200).nullish(),
  run_id: z.string().max(200).nullish(),
  hash: z.string().max(200).nullish(),
  metadata: z.record(z.string(), z.unknown()).nullish(),
  categories: z.array(z.string().min(1).max(100)).max(50).nullish(),
  created_at: z.string().max(100).nullish(),
  updated_at: z.string().max(100).nullish(),
});

export function fromMem0(text: string): ImportRecords {
  let document: unknown;
  try {
    document = JSON.parse(text);
  } catch {
    throw badLine(
      1,
      'a mem0 export is one JSON document (a list of memories, or {"results": [...]}); this is not valid JSON',
    );
  }
  const list = Array.isArray(document) ? document : (document as { results?: unknown } | null)?.results;
  if (!Array.isArray(list)) throw badLine(1, 'a mem0 export is a list of memories or {"results": [...]}');
  const records = emptyRecords("mem0");
  list.forEach((value, i) => {
    const record = i + 1;
    const m = check(mem0Memory, value, record);
    const created = m.created_at ? Date.parse(m.created_at) : Date.now();
    const updated = m.updated_at ? Date.parse(m.updated_at) : created;
    if (Number.isNaN(created) || Number.isNaN(updated))
      throw badLine(record, "created_at / updated_at must be ISO 8601 dates");
    const ids = Object.fromEntries(
      Object.entries({ mem0_id: String(m.id), user_id: m.user_id, agent_id: m.agent_id, run_id: m.run_id }).filter(
        ([, v]) => v != null,
      ),
    );
    records.items.push(
      memory(`mem0:${m.id}`, m.memory, record, {
        tags: [...new Set(m.categories ?? [])],
        metadata: { ...(m.metadata ?? {}), ...ids, source: "mem0" },
        created_at: created,
        touched_at: updated,
      }),
    );
  });
  return records;
}
