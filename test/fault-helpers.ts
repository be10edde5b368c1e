import { createExecutionContext, waitOnExecutionContext } from "cloudflare:test";
import { env } from "cloudflare:workers";
import worker from "../src/index";
import type { TestTenant } from "./helpers";

// Requests through the Worker's entry with FAULTS (src/adapters/faults.ts) set for them alone.

/** A request through the Worker's entry with FAULTS set for it alone. */
export async function fetchWith(
  faults: string,
  path: string,
  init: { method?: string; headers?: Record<string, string>; body?: unknown },
): Promise<Response> {
  const ctx = createExecutionContext();
  const response = await worker.fetch(
    new Request(`http://localhost${path}`, {
      method: init.method ?? "POST",
      headers: { "content-type": "application/json", ...init.headers },
      body: init.body === undefined ? undefined : JSON.stringify(init.body),
    }),
    { ...env, FAULTS: faults },
    ctx,
  );
  await waitOnExecutionContext(ctx);
  return response;
}

export type RpcAnswer = {
  result?: Record<string, any>;
  error?: { code: number; message: string; data?: { code: string; details: Record<string, unknown> } };
};

/** A tool call through the Worker with FAULTS set; the tool's result (or the JSON-RPC error). */
export async function callWith(
  faults: string,
  t: TestTenant,
  name: string,
  args: Record<string, unknown>,
): Promise<RpcAnswer> {
  const body = { jsonrpc: "2.0", id: 1, method: "tools/call", params: { name, arguments: args } };
  return (await (
    await fetchWith(faults, "/jsonrpc", { headers: { authorization: `Bearer ${t.apiKey}` }, body })
  ).json()) as RpcAnswer;
}
