import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import type { JobMessage } from "../src/messages";
import { call, newTenant, type TestTenant } from "./helpers";
import { deliverJobs } from "./ownership-fixtures";

// Workers AI takes 3,000 embedding requests a minute by default, and a call up to 32 texts (qwen3). A queue batch's
// embed jobs run tenant by tenant, so one-item writes from many tenants each made a call; now the batch's small embed
// groups are embedded in shared calls first. Through the Worker's queue handler, with Workers AI's binding faked.
function countingAi() {
  const calls: number[] = [];
  const ai = {
    run: async (_model: string, input: Record<string, string[]>) => {
      const texts = input.documents ?? input.queries ?? input.text ?? [];
      if (texts.length > 32) throw new Error(`AiError: 5006: input has ${texts.length} items; at most 32`);
      calls.push(texts.length);
      return {
        data: texts.map((text) => Array.from({ length: 1024 }, (_, i) => (i === text.length % 1024 ? 1 : 0.01))),
      };
    },
  };
  return { calls, ai: ai as unknown as Ai };
}

/** On the Free plan's 50 D1 queries an invocation the sharing stands aside (its re-reads would take the jobs' queries). */
const shares = Number((env as { D1_QUERIES_PER_INVOCATION?: string }).D1_QUERIES_PER_INVOCATION ?? 1000) >= 250;

const workersAi = (ai: Ai) => ({ EMBEDDER: "workers-ai", AI: ai, EMBEDDING_DIMENSIONS: "768" }) as Partial<typeof env>;

async function storeOne(t: TestTenant, content: string): Promise<JobMessage> {
  const { ids } = await call<{ ids: string[] }>(t.apiKey, "memory_batch_store", { memories: [{ content }] });
  return { type: "embed", tenantId: t.tenantId, itemIds: ids };
}

/** The tenant's vectors written by Workers AI's 768 dimensions (the queue's own consumer writes the local 256 first). */
const vectorsOf = async (t: TestTenant) =>
  (await t.db
    .prepare("SELECT COUNT(*) AS n FROM local_vectors WHERE tenant_id = ? AND length(vector) = 768 * 4")
    .bind(t.tenantId)
    .first<{ n: number }>())!.n;

describe("embedding calls shared by a batch's tenants", () => {
  it("one-item writes from five tenants in one batch are embedded in one call (Paid plan budget), every item with its vector", async () => {
    const tenants = await Promise.all(Array.from({ length: 5 }, () => newTenant()));
    const jobs = await Promise.all(
      tenants.map((t, i) => storeOne(t, `Tenant ${i} keeps the spare key under the blue flowerpot.`)),
    );
    const { calls, ai } = countingAi();
    await deliverJobs(jobs, workersAi(ai));
    expect(calls).toEqual(shares ? [5] : [1, 1, 1, 1, 1]); // was five calls of one text each
    for (const t of tenants) expect(await vectorsOf(t)).toBe(1);
  });

  it("past 32 texts the shared calls hold 32 each; one tenant alone embeds as before", async () => {
    const tenants = await Promise.all(Array.from({ length: 3 }, () => newTenant()));
    const jobs: JobMessage[] = [];
    for (const [i, t] of tenants.entries()) {
      const { ids } = await call<{ ids: string[] }>(t.apiKey, "memory_batch_store", {
        memories: Array.from({ length: 15 }, (_, k) => ({ content: `Ledger ${i}-${k}: paid the ferry toll.` })),
      });
      jobs.push({ type: "embed", tenantId: t.tenantId, itemIds: ids });
    }
    const shared = countingAi();
    await deliverJobs(jobs, workersAi(shared.ai));
    expect(shared.calls).toEqual(shares ? [32, 13] : [15, 15, 15]); // 45 texts; tenant by tenant it was [15, 15, 15]
    for (const t of tenants) expect(await vectorsOf(t)).toBe(15);

    const alone = countingAi();
    await deliverJobs([jobs[0]!], workersAi(alone.ai));
    expect(alone.calls).toEqual([15]);
  });
});
