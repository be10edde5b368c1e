import type { TenantScope } from "../../db/scope";
import { EXTRACTION_GRACE_MS } from "../memory/conversation-jobs";

/**
 * Sets when a job should next have read the conversation (`expected`, plus the grace), or clears it when nothing is
 * left to read: no turn past the cursor. A turn written meanwhile keeps it set, whatever `expected` says. A
 * document's (`document`): nothing is left once the cursor has passed its chunks.
 */
export function dueStatement(
  scope: TenantScope,
  conversationId: string,
  expected: number | null,
  document = false,
): D1PreparedStatement {
  return scope.d1
    .prepare(
      `UPDATE ${document ? "documents" : "conversations"} SET extract_due_at = CASE
         WHEN ?3 IS NOT NULL THEN ?3
         WHEN extracted_count >= ${document ? "chunks" : "next_position"} THEN NULL
         ELSE ?4 END
       WHERE tenant_id = ?1 AND id = ?2`,
    )
    .bind(
      scope.tenantId,
      conversationId,
      expected === null ? null : expected + EXTRACTION_GRACE_MS,
      Date.now() + EXTRACTION_GRACE_MS,
    );
}

/** Clears it: the source does not extract, so no job will read it until a write says otherwise. */
export function notDueStatement(scope: TenantScope, conversationId: string, document = false): D1PreparedStatement {
  return scope.d1
    .prepare(
      `UPDATE ${document ? "documents" : "conversations"} SET extract_due_at = NULL WHERE tenant_id = ? AND id = ?`,
    )
    .bind(scope.tenantId, conversationId);
}
