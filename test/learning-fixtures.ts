import { createExecutionContext, createMessageBatch, getQueueResult, waitOnExecutionContext } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { vi } from "vitest";
import type { PromptTurn } from "../src/core/extraction/contract";
import worker from "../src/index";
import type { JobMessage } from "../src/messages";
import { type FakeMemory, type FakeWindow, NoisyModel, type NoisyModelOptions } from "./fakes/noisy-model";
import { call, newTenant, type TestTenant } from "./helpers";
import { deliverJobs } from "./ownership-fixtures";

// Extraction against the noisy OpenAI-compatible fake (fakes/noisy-model.ts), through the real routes and the real
// queue consumer: conversations stored with memory_ingest (in the `workers` project, where the deployment extracts
// nothing by itself), then extract jobs delivered to the Worker's queue handler with an `openai` model configured.

export const MODEL_URL = "https://noisy-model.test/v1";

/** The settings a job runs under: the noisy endpoint as the deployment's model. */
export function modelEnv(overrides: Record<string, string> = {}): Partial<typeof env> {
  return { LLM: "openai", LLM_BASE_URL: MODEL_URL, LLM_MODEL: "noisy-1", ...overrides } as Partial<typeof env>;
}

export interface Said {
  speaker: string;
  role?: "user" | "assistant" | "system" | "tool";
  content: string;
  /** ISO 8601. */
  timestamp: string;
}

/** A tenant with a conversation stored through memory_ingest; the stored turns' ids in order. */
export async function conversation(
  said: readonly Said[],
  { tenant, id = "c", project = "p" }: { tenant?: TestTenant; id?: string; project?: string } = {},
): Promise<{ t: TestTenant; ids: string[] }> {
  const t = tenant ?? (await newTenant());
  const { ids } = await call(t.apiKey, "memory_ingest", {
    conversation_id: id,
    project_id: project,
    messages: said.map((s) => ({ role: s.role ?? "user", ...s })),
  });
  return { t, ids };
}

/** Runs extract jobs against `model` (its fetch in place of the endpoint) until the conversation is read. */
export async function extract(
  t: TestTenant,
  model: NoisyModel,
  { id = "c", env: vars = {}, jobs = 1 }: { id?: string; env?: Record<string, string>; jobs?: number } = {},
): Promise<void> {
  const fetch = vi.spyOn(globalThis, "fetch").mockImplementation(model.fetch);
  try {
    for (let i = 0; i < jobs; i++)
      await deliverJobs([{ type: "extract", tenantId: t.tenantId, conversationId: id, flush: true }], modelEnv(vars));
  } finally {
    fetch.mockRestore();
  }
}

/** One extract job through the Worker's queue handler; whether the queue was told to retry it. */
export async function deliverOnce(
  t: TestTenant,
  model: NoisyModel,
  vars: Record<string, string> = {},
): Promise<{ retried: boolean }> {
  const fetch = vi.spyOn(globalThis, "fetch").mockImplementation(model.fetch);
  try {
    const body: JobMessage = { type: "extract", tenantId: t.tenantId, conversationId: "c", flush: true };
    const batch = createMessageBatch<JobMessage>("context-edge-jobs", [
      { id: `x-${Date.now()}`, timestamp: new Date(), attempts: 1, body },
    ]);
    const ctx = createExecutionContext();
    await worker.queue(batch, { ...env, ...modelEnv(vars) }, ctx);
    await waitOnExecutionContext(ctx);
    return { retried: (await getQueueResult(batch, ctx)).retryMessages.length > 0 };
  } finally {
    fetch.mockRestore();
  }
}

/** A truth function from rules: each turn to extract from whose text holds a rule's words gives its memories. */
export function truthFrom(
  rules: Record<string, (turn: PromptTurn, window: FakeWindow) => Omit<FakeMemory, "sources">[]>,
): NoisyModelOptions["truth"] {
  return (window) =>
    window.turns.flatMap((turn) =>
      Object.entries(rules)
        .filter(([words]) => turn.text.includes(words))
        .flatMap(([, memories]) => memories(turn, window).map((m) => ({ ...m, sources: [turn.ref] }))),
    );
}

/** A fact about a subject, as a perfect model answers it. */
export const fact = (subject: string, text: string, extra: Partial<FakeMemory> = {}): Omit<FakeMemory, "sources"> => ({
  type: "fact",
  subject,
  key: null,
  text,
  when: null,
  ...extra,
});

/** Derived memories of the tenant, oldest first, with what the checks read. */
export async function derivedRows(t: TestTenant): Promise<Record<string, any>[]> {
  const { results } = await t.db
    .prepare(
      `SELECT id, content, tier, key, subject, subject_key, memory_kind, valid_from, valid_to, superseded_by, said_by,
         when_precision, sources FROM items
       WHERE tenant_id = ? AND memory_kind IS NOT NULL ORDER BY created_at, rowid`,
    )
    .bind(t.tenantId)
    .all<Record<string, any>>();
  return results.map((r) => ({ ...r, sources: JSON.parse(r.sources) as string[] }));
}

export async function history(t: TestTenant, conversationId = "c"): Promise<Record<string, any>[]> {
  return (await call(t.apiKey, "memory_history", { conversation_id: conversationId })).events;
}

export { NoisyModel };
