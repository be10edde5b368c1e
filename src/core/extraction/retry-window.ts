import type { TenantScope } from "../../db/scope";
import type { JsonModel, Services } from "../../ports";
import { recordEvents } from "./events";
import { extractWindow, type WindowOutcome } from "./extract-window";
import type { TurnSource } from "./window-records";
import { partOf, readTurns } from "./windows";

/**
 * Tries a failed window again (the minute pass sends its job when its retry_at comes, memory_reextract forces it):
 * the same turns, found again by their positions (those deleted meanwhile left out), under the window's own id, so
 * its record and events stay one. Later windows of the conversation never waited for it: the cursor is past it.
 * A window no longer failed, or out of tries (unless forced), is left; one whose turns are all gone stops being
 * tried. Two tries of one window never both commit: each is guarded by the tries it read (window-records.ts).
 */
export async function retryWindow(
  scope: TenantScope,
  services: Services,
  model: JsonModel,
  place: TurnSource,
  windowId: string,
  force = false,
): Promise<WindowOutcome | null> {
  const row = await scope.d1
    .prepare(
      `SELECT first_position, last_position, attempts, retry_at FROM extraction_windows
       WHERE tenant_id = ? AND id = ? AND conversation_id = ? AND status = 'failed'`,
    )
    .bind(scope.tenantId, windowId, place.conversationId)
    .first<{ first_position: number; last_position: number; attempts: number; retry_at: number | null }>();
  if (!row || (!force && row.retry_at === null)) return null;
  const overlap = services.config.extraction.overlapTurns;
  const { context, turns } = await readTurns(
    scope,
    place.conversationId,
    row.first_position,
    overlap,
    row.last_position,
    place.document,
  );
  if (turns.length === 0) {
    await scope.d1.batch([
      scope.d1
        .prepare("UPDATE extraction_windows SET retry_at = NULL WHERE tenant_id = ? AND id = ?")
        .bind(scope.tenantId, windowId),
      ...recordEvents(scope, place, windowId, Date.now(), [
        {
          event: "failed",
          memoryId: null,
          key: null,
          sources: [],
          error: null,
          reason: "its turns were deleted: not tried again",
        },
      ]),
    ]);
    return null;
  }
  const window = { ...partOf(turns, context, overlap), id: windowId };
  const extractedCount = turns[turns.length - 1]!.position + 1;
  return extractWindow(scope, services, model, { ...place, extractedCount, cursorAt: null }, window, {
    attempts: row.attempts,
  });
}
