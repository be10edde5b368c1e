import { IN_JSON, type TenantScope } from "../../db/scope";
import { AppError } from "../../errors";
import type { Services } from "../../ports";
import { NO_USAGE, type TenantUsage, usageOf, usageStatement } from "../tenants/quotas";
import { extractSettingsStatement } from "./conversation-jobs";
import type { NewItem } from "./item-types";

// What a write reads before it writes (items.ts), in one round trip.

/**
 * What a write needs to know first, in one round trip: items that already hold the same content (for
 * dedupe; messages are exempt), the latest message of each conversation the inputs append to, and the
 * tenant's usage for its quotas (`withUsage`). A conversation belongs to one project: a message for a
 * conversation of another project is refused before anything is written.
 */
export async function readBeforeWrite(
  scope: TenantScope,
  inputs: NewItem[],
  hashes: string[],
  withUsage: boolean,
  withExtraction: boolean,
): Promise<{
  existing: Map<string, string>;
  previousTurn: Map<string, string>;
  conversationProjects: Map<string, string>;
  usage: TenantUsage;
  /** Projects' own extraction settings (where they have one), for the conversations a write appends to. */
  extractSettings: Map<string, boolean>;
}> {
  const projectOf = new Map<string, string>();
  for (const item of inputs) {
    if (!item.conversationId || item.projectFromConversation) continue;
    const project = projectOf.get(item.conversationId);
    if (project !== undefined && project !== item.project) throw conversationConflict(item.conversationId);
    projectOf.set(item.conversationId, item.project);
  }
  const conversations = [...new Set(inputs.flatMap((item) => (item.conversationId ? [item.conversationId] : [])))];
  const wanted = [...new Set(hashes.filter((_, i) => !inputs[i]!.conversationId))];
  const wantedProjects = [...new Set(inputs.filter((item) => !item.conversationId).map((item) => item.project))];
  const statements: D1PreparedStatement[] = conversations.map((conversationId) =>
    scope.d1
      .prepare(
        `SELECT c.project, (SELECT content FROM items i WHERE i.tenant_id = c.tenant_id AND i.conversation_id = c.id ORDER BY position DESC LIMIT 1) AS content
         FROM conversations c WHERE c.tenant_id = ? AND c.id = ?`,
      )
      .bind(scope.tenantId, conversationId),
  );
  if (wanted.length > 0) {
    statements.push(
      scope.d1
        // Both lists as IN: the lookup walks the unique (tenant, project, hash) index, not the tenant's rows.
        // Current items only: a superseded fact's text may be stored again.
        .prepare(
          `SELECT id, project, key, content_hash FROM items
           WHERE tenant_id = ? AND project ${IN_JSON} AND conversation_id IS NULL AND tier <> 'superseded' AND content_hash ${IN_JSON}`,
        )
        .bind(scope.tenantId, JSON.stringify(wantedProjects), JSON.stringify(wanted)),
    );
  }
  // Last, so the other results keep their places; they ride in the same batch (no round trip of their own).
  const usageAt = withUsage ? statements.push(usageStatement(scope.d1, scope.tenantId)) - 1 : -1;
  const settingsAt =
    withExtraction && conversations.length > 0
      ? statements.push(
          extractSettingsStatement(
            scope,
            [...new Set(inputs.filter((i) => i.conversationId).map((i) => i.project))],
            conversations,
          ),
        ) - 1
      : -1;
  const existing = new Map<string, string>();
  const previousTurn = new Map<string, string>();
  const conversationProjects = new Map<string, string>();
  const extractSettings = new Map<string, boolean>();
  if (statements.length === 0)
    return { existing, previousTurn, conversationProjects, usage: NO_USAGE, extractSettings };
  const results = await scope.d1.batch<Record<string, string | null>>(statements);
  conversations.forEach((conversationId, i) => {
    const row = results[i]!.results[0] as { project: string; content: string | null } | undefined;
    if (!row) return;
    const given = projectOf.get(conversationId);
    if (given !== undefined && row.project !== given) throw conversationConflict(conversationId);
    conversationProjects.set(conversationId, row.project);
    if (row.content !== null) previousTurn.set(conversationId, row.content);
  });
  if (wanted.length > 0) {
    for (const row of results[conversations.length]!.results as {
      id: string;
      project: string;
      key: string | null;
      content_hash: string;
    }[]) {
      existing.set(`${row.project}\u0000${row.key ?? ""}\u0000${row.content_hash}`, row.id);
    }
  }
  if (settingsAt >= 0) {
    for (const row of results[settingsAt]!.results as unknown as { project: string; extract: number }[])
      extractSettings.set(row.project, row.extract === 1);
  }
  const usage = usageAt >= 0 ? usageOf(results[usageAt]) : NO_USAGE;
  return { existing, previousTurn, conversationProjects, usage, extractSettings };
}

/** Whether a project extracts memories: its own setting, else the deployment's default. */
export function extractionOn(project: string, settings: ReadonlyMap<string, boolean>, services: Services): boolean {
  return settings.get(project) ?? services.config.extraction.byDefault;
}

export function conversationConflict(conversationId: string): AppError {
  return new AppError(
    "CONFLICT",
    `Conversation '${conversationId}' belongs to another project; a conversation keeps the project it was created in`,
    {
      parameter: "conversation_id",
    },
  );
}
