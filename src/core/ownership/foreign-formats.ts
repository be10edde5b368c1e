import { z } from "zod";
import { MAX_ITEM_CHARS } from "../memory/item-types";
import { badLine, check, type ImportRecords, type ItemRecord } from "./import-lines";

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
    line,
    ...fields,
  };
}

const emptyRecords = (format: ImportRecords["format"]): ImportRecords => ({ format, conversations: [], items: [], summaries: [], projectTasks: [], links: [] });

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
const relationLine = z.object({ type: z.literal("relation"), from: z.string().min(1).max(200), to: z.string().min(1).max(200), relationType: z.string().min(1).max(100) });

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
      if (content.length > MAX_ITEM_CHARS) throw badLine(line, `entity '${entity.name}' is ${content.length} characters with its observations; the limit is ${MAX_ITEM_CHARS}`);
      const id = `mcp-entity:${entity.name}`;
      entities.set(entity.name, id);
      records.items.push(
        memory(id, content, line, {
          tags: [entity.entityType.slice(0, 100)],
          key: `entity:${entity.name}`,
          metadata: { source: "mcp-memory", entity: entity.name, entity_type: entity.entityType, observations: entity.observations },
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
    if (!source || !target) throw badLine(line, `relation names entity '${!source ? relation.from : relation.to}', which the file does not define`);
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
    throw badLine(1, "a mem0 export is one JSON document (a list of memories, or {\"results\": [...]}); this is not valid JSON");
  }
  const list = Array.isArray(document) ? document : (document as { results?: unknown } | null)?.results;
  if (!Array.isArray(list)) throw badLine(1, 'a mem0 export is a list of memories or {"results": [...]}');
  const records = emptyRecords("mem0");
  list.forEach((value, i) => {
    const record = i + 1;
    const m = check(mem0Memory, value, record);
    const created = m.created_at ? Date.parse(m.created_at) : Date.now();
    const updated = m.updated_at ? Date.parse(m.updated_at) : created;
    if (Number.isNaN(created) || Number.isNaN(updated)) throw badLine(record, "created_at / updated_at must be ISO 8601 dates");
    const ids = Object.fromEntries(Object.entries({ mem0_id: String(m.id), user_id: m.user_id, agent_id: m.agent_id, run_id: m.run_id }).filter(([, v]) => v != null));
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
