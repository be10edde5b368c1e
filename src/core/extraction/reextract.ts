import type { TenantScope } from "../../db/scope";
import { notFound } from "../../errors";
import type { JobMessage } from "../../messages";
import type { Services } from "../../ports";
import { recordEvents } from "./events";

/** Most conversations one memory_reextract call starts again; more are named in the answer to ask for next. */
export const REEXTRACT_CONVERSATIONS = 200;

export interface ReextractRequest {
  project: string;
  /** One conversation; default: every conversation of the project. */
  conversationId?: string;
  /** Only turns said at or after this time (epoch ms); default: all. */
  since?: number;
}

export interface Reextracted {
  conversations: string[];
  /** Turns the started jobs will read. */
  turns: number;
  /** More conversations matched than one call starts: call again with `since` or per conversation. */
  truncated: boolean;
}

/**
 * Reads conversations again with the current model and contract (memory_reextract): each conversation starts a new
 * extraction epoch, so its windows are new windows (windows.ts), its cursor goes back to its first turn at or after
 * `since`, its failed windows in that range stop waiting for their retries (the new reading covers them), and an
 * extract job is queued. Consolidation then merges what is already known (a duplicate only adds sources) and adds
 * what is new; memory_history records a `reextract` event per conversation. NOT_FOUND for a project (or
 * conversation) that does not exist.
 */
export async function reextract(
  scope: TenantScope,
  services: Services,
  request: ReextractRequest,
): Promise<Reextracted> {
  const since = request.since ?? 0;
  const { results } = await scope.d1
    .prepare(
      `SELECT c.id,
         (SELECT MIN(i.position) FROM items i WHERE i.tenant_id = c.tenant_id AND i.conversation_id = c.id AND i.created_at >= ?3) AS first,
         (SELECT COUNT(*) FROM items i WHERE i.tenant_id = c.tenant_id AND i.conversation_id = c.id AND i.created_at >= ?3) AS turns
       FROM conversations c WHERE c.tenant_id = ?1 AND c.project = ?2 ${request.conversationId ? "AND c.id = ?4" : ""}
       ORDER BY c.updated_at DESC LIMIT ${REEXTRACT_CONVERSATIONS + 1}`,
    )
    .bind(scope.tenantId, request.project, since, ...(request.conversationId ? [request.conversationId] : []))
    .all<{ id: string; first: number | null; turns: number }>();
  if (results.length === 0) {
    if (request.conversationId)
      throw notFound(`No conversation '${request.conversationId}' in project '${request.project}'`, {
        parameter: "conversation_id",
      });
    const project = await scope.d1
      .prepare("SELECT 1 AS found FROM items WHERE tenant_id = ? AND project = ? LIMIT 1")
      .bind(scope.tenantId, request.project)
      .first();
    if (!project)
      throw notFound(`Project '${request.project}' does not exist (nothing is stored in it)`, {
        parameter: "project_id",
      });
  }
  const chosen = results.slice(0, REEXTRACT_CONVERSATIONS).filter((c) => c.first !== null);
  if (chosen.length > 0) {
    const list = JSON.stringify(chosen.map((c) => [c.id, c.first]));
    const now = Date.now();
    await scope.d1.batch([
      scope.d1
        .prepare(
          `UPDATE conversations SET extraction_epoch = extraction_epoch + 1,
             extracted_count = (SELECT j.value ->> 1 FROM json_each(?2) j WHERE j.value ->> 0 = conversations.id),
             extracted_tokens = (SELECT COALESCE(SUM(i.tokens), 0) FROM items i WHERE i.tenant_id = ?1
               AND i.conversation_id = conversations.id
               AND i.position < (SELECT j.value ->> 1 FROM json_each(?2) j WHERE j.value ->> 0 = conversations.id)),
             extract_due_at = ?3
           WHERE tenant_id = ?1 AND id IN (SELECT j.value ->> 0 FROM json_each(?2) j)`,
        )
        .bind(scope.tenantId, list, now + 5 * 60_000),
      scope.d1
        .prepare(
          `UPDATE extraction_windows SET retry_at = NULL
           WHERE tenant_id = ?1 AND status = 'failed' AND retry_at IS NOT NULL
             AND conversation_id IN (SELECT j.value ->> 0 FROM json_each(?2) j)
             AND last_position >= (SELECT j.value ->> 1 FROM json_each(?2) j WHERE j.value ->> 0 = extraction_windows.conversation_id)`,
        )
        .bind(scope.tenantId, list),
      ...chosen.flatMap((c) =>
        recordEvents(scope, { project: request.project, conversationId: c.id }, null, now, [
          {
            event: "reextract",
            memoryId: null,
            key: null,
            sources: [],
            error: null,
            reason: `read again from position ${c.first} with ${services.model?.name ?? "no model"}${
              request.since === undefined ? "" : ` (turns since ${new Date(since).toISOString()})`
            }`,
          },
        ]),
      ),
    ]);
    const jobs: JobMessage[] = chosen.map((c) => ({
      type: "extract",
      tenantId: scope.tenantId,
      conversationId: c.id,
      flush: true,
      force: true,
    }));
    try {
      await services.jobs.send(jobs);
    } catch (error) {
      // The cursor has moved back and extract_due_at is set: the minute pass sends the jobs.
      console.error("could not queue re-extraction; the minute pass sends it", error);
    }
  }
  return {
    conversations: chosen.map((c) => c.id),
    turns: chosen.reduce((n, c) => n + c.turns, 0),
    truncated: results.length > REEXTRACT_CONVERSATIONS,
  };
}
