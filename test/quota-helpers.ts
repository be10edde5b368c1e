import { createExecutionContext, waitOnExecutionContext } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { expect } from "vitest";
import worker from "../src/index";
import { admin } from "./helpers";

export type Quotas = Partial<
  Record<"max_items" | "max_bytes" | "max_pending_jobs" | "calls_per_minute", number | "unlimited" | null>
>;

/** Sets a tenant's quotas as the operator (PATCH /admin/tenants/:id); returns the tenant as answered. */
export async function setQuotas(tenantId: string, quotas: Quotas): Promise<any> {
  const response = await admin("PATCH", `/tenants/${tenantId}`, { quotas });
  expect(response.status, await response.clone().text()).toBe(200);
  return response.json();
}

/** A request through the worker's fetch handler with some bindings replaced, its waitUntil work awaited. */
export async function fetchWorker(request: Request, overrides: Partial<typeof env> = {}): Promise<Response> {
  const ctx = createExecutionContext();
  const response = (await worker.fetch!(request as any, { ...env, ...overrides }, ctx)) as unknown as Response;
  await waitOnExecutionContext(ctx);
  return response;
}
