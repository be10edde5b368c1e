import type { TenantScope } from "../../db/scope";
import type { Services } from "../../ports";
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
 */
export async function ingestConversation(
  scope: TenantScope,
  services: Services,
  messages: NewItem[],
  extract: boolean | undefined,
): Promise<IngestedConversation> {
  const written = await writeItems(scope, services, messages, {
    noExtractionJobs: true,
    ...(extract === undefined ? {} : { extractOverride: extract }),
  });
  const first = messages[0]!;
  const on =
    services.model !== null &&
    (extract ?? (await readProjectSettings(scope, first.project)).extract ?? services.config.extraction.byDefault);
  if (on) {
    await services.jobs.send([
      {
        type: "extract",
        tenantId: scope.tenantId,
        conversationId: first.conversationId!,
        flush: true,
        ...(extract === true ? { force: true } : {}),
      },
    ]);
  }
  return { ids: written.map((w) => w.id), extraction: on ? "queued" : "off" };
}
