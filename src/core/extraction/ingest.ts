import type { TenantScope } from "../../db/scope";
import type { Services } from "../../ports";
import { type KeyedCall, oncePerKey } from "../memory/idempotency";
import type { NewItem } from "../memory/item-types";
import { writeItems } from "../memory/items";
import { readProjectSettings } from "./settings";

/** Most messages one memory_ingest call takes. */
export const MAX_INGEST_MESSAGES = 500;

export interface IngestedConversation {
  ids: string[];
  /** queued: one extraction job reads the whole conversation; off: no model, or the project does not extract. */
  extraction: "queued" | "off";
}

/**
 * Stores a conversation's messages in order (one atomic write) and, where extraction is on for it (`extract`, else
 * the project's setting, else the deployment's default), queues one job that reads it whole, last window included.
 * With a key (`keyed`), a repeat of the call answers the first one's result and stores nothing (idempotency.ts).
 */
export async function ingestConversation(
  scope: TenantScope,
  services: Services,
  messages: NewItem[],
  extract: boolean | undefined,
  keyed?: KeyedCall,
): Promise<IngestedConversation> {
  const [ingested] = await oncePerKey<IngestedConversation>(scope, [keyed], async (_pending, alsoInBatch) => {
    const first = messages[0]!;
    // Read before the write, so the answer stored with the key is known in its batch.
    const on =
      services.model !== null &&
      (extract ?? (await readProjectSettings(scope, first.project)).extract ?? services.config.extraction.byDefault);
    const extraction = on ? "queued" : "off";
    const written = await writeItems(scope, services, messages, {
      noExtractionJobs: true,
      ...(extract === undefined ? {} : { extractOverride: extract }),
      alsoInBatch: (items) => alsoInBatch([{ ids: items.map((w) => w.id), extraction }]),
    });
    if (on) await queueExtraction(scope, services, first.conversationId!, extract === true);
    return [{ ids: written.map((w) => w.id), extraction }];
  });
  return ingested!;
}

/**
 * The write has committed: a failed send must not fail the call, or a client's retry without a key would store every
 * turn twice. Logged; the write set the conversation's extract_due_at, so the minute pass sends the job.
 */
async function queueExtraction(
  scope: TenantScope,
  services: Services,
  conversationId: string,
  force: boolean,
): Promise<void> {
  try {
    await services.jobs.send([
      { type: "extract", tenantId: scope.tenantId, conversationId, flush: true, ...(force ? { force: true } : {}) },
    ]);
  } catch (error) {
    console.error("could not queue a conversation's extraction after ingesting it", error);
  }
}
