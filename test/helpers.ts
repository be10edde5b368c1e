import { env, exports } from "cloudflare:workers";
import { expect } from "vitest";
import { assetTokenTables } from "../src/adapters/asset-token-tables";
import { shardDatabase } from "../src/control/shards";
import { type TokenCounter, tokenCounter } from "../src/shared/tokens";
import type { TokenEncoding } from "../src/token-encodings";

export const ADMIN_TOKEN = "test-admin-token";
export const BASE = "http://localhost";

/** A token counter as the worker builds it: its table fetched through the ASSETS binding. */
export function workerTokenCounter(encoding: TokenEncoding): Promise<TokenCounter> {
  return tokenCounter(encoding, assetTokenTables(env.ASSETS));
}

/** A request through the worker's real fetch handler. */
export function request(path: string, init: RequestInit = {}): Promise<Response> {
  return exports.default.fetch(new Request(BASE + path, init));
}

export async function admin(method: string, path: string, body?: unknown, token = ADMIN_TOKEN): Promise<Response> {
  return request(`/admin${path}`, {
    method,
    headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
}

export interface TestTenant {
  tenantId: string;
  apiKey: string;
  keyId: string;
  /** The data shard that holds the tenant (placement chose it): what a test reads to check storage. */
  db: D1Database;
  shard: string;
}

let counter = 0;

/** A fresh tenant and key via the admin API (fresh keys keep the per-key rate limit out of the way). */
export async function newTenant(options: { scopes?: string[]; projects?: string[] } = {}): Promise<TestTenant> {
  const tenant = await (await admin("POST", "/tenants", { name: `tenant ${++counter}` })).json<{
    tenant_id: string;
    shard: string;
  }>();
  const key = await newKey(tenant.tenant_id, options);
  return { tenantId: tenant.tenant_id, ...key, shard: tenant.shard, db: shardDatabase(env, tenant.shard) };
}

/** The data shard that holds a tenant now, as the control database says. */
export async function tenantDb(tenantId: string): Promise<D1Database> {
  const row = await env.CONTROL.prepare("SELECT shard FROM tenants WHERE id = ?")
    .bind(tenantId)
    .first<{ shard: string }>();
  if (!row) throw new Error(`no tenant ${tenantId}`);
  return shardDatabase(env, row.shard);
}

export async function newKey(
  tenantId: string,
  options: { scopes?: string[]; projects?: string[] } = {},
): Promise<{ apiKey: string; keyId: string }> {
  const response = await admin("POST", `/tenants/${tenantId}/keys`, { name: "test", ...options });
  if (response.status !== 201) throw new Error(`key creation failed: ${response.status} ${await response.text()}`);
  const key = await response.json<{ api_key: string; key_id: string }>();
  return { apiKey: key.api_key, keyId: key.key_id };
}

/**
 * Waits, if need be, until a rate-limit window has at least `seconds` left. Local rate limiters count in windows
 * aligned to the wall clock (miniflare's epoch is floor(now / period)), so a test that spends a limit and expects the
 * refusal fails when a window ends in between. The wait (at most `seconds`) stays well inside a test's 20 s timeout.
 */
export async function insideOneRateWindow(seconds = 10, periodSeconds = 60): Promise<void> {
  const left = periodSeconds * 1000 - (Date.now() % (periodSeconds * 1000));
  if (left < seconds * 1000) await new Promise((resolve) => setTimeout(resolve, left + 50));
}

export interface RpcResponse {
  jsonrpc: "2.0";
  id: unknown;
  result?: any;
  error?: { code: number; message: string; data?: any };
}

/** POST a JSON-RPC body to /jsonrpc (seed 000's transport). */
export async function jsonrpc(apiKey: string, body: unknown, query = ""): Promise<Response> {
  return request(`/jsonrpc${query}`, {
    method: "POST",
    headers: { authorization: `Bearer ${apiKey}`, "content-type": "application/json" },
    body: typeof body === "string" ? body : JSON.stringify(body),
  });
}

/** tools/call over /jsonrpc; returns the JSON-RPC response. */
export async function callTool(
  apiKey: string,
  name: string,
  args: Record<string, unknown> = {},
  query = "",
): Promise<RpcResponse> {
  const response = await jsonrpc(
    apiKey,
    { jsonrpc: "2.0", method: "tools/call", params: { name, arguments: args }, id: 1 },
    query,
  );
  return response.json<RpcResponse>();
}

/** tools/call that must succeed; returns the tool's own result object. */
export async function call<T = any>(apiKey: string, name: string, args: Record<string, unknown> = {}): Promise<T> {
  const response = await callTool(apiKey, name, args);
  if (response.error) throw new Error(`${name} failed: ${JSON.stringify(response.error)}`);
  return response.result as T;
}

/** A POST to /mcp with a raw JSON-RPC body, as an MCP client would send it. */
export async function mcpPost(
  apiKey: string | null,
  body: unknown,
  options: { query?: string; accept?: string; headers?: Record<string, string> } = {},
): Promise<Response> {
  const headers: Record<string, string> = {
    "content-type": "application/json",
    accept: options.accept ?? "application/json, text/event-stream",
    ...options.headers,
  };
  if (apiKey) headers.authorization = `Bearer ${apiKey}`;
  return request(`/mcp${options.query ?? ""}`, { method: "POST", headers, body: JSON.stringify(body) });
}

/** Waits until every item of a tenant has been embedded by the real queue consumer. */
export async function waitForEmbeddings(tenantId: string, timeoutMs = 20_000): Promise<void> {
  const started = Date.now();
  for (;;) {
    const row = await (await tenantDb(tenantId))
      .prepare("SELECT COUNT(*) AS pending FROM items WHERE tenant_id = ? AND embedded_at IS NULL")
      .bind(tenantId)
      .first<{ pending: number }>();
    if (row!.pending === 0) return;
    if (Date.now() - started > timeoutMs)
      throw new Error(`${row!.pending} items still unembedded after ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** Tool calls the usage log has written for a tenant (of one tool, or all). */
async function loggedCalls(tenantId: string, tool?: string): Promise<number> {
  // The hourly aggregates: tool_calls keeps a row only for failed calls and a sample of the rest.
  const db = await tenantDb(tenantId);
  const row = await db
    .prepare(
      "SELECT COALESCE(SUM(calls), 0) AS n FROM usage_hours WHERE tenant_id = ? AND source = 'tool' AND (?2 IS NULL OR name = ?2)",
    )
    .bind(tenantId, tool ?? null)
    .first<{ n: number }>();
  return row!.n;
}

/** Waits until the tenant's project deletions have finished (their jobs run through the test queue). */
export async function untilProjectsDeleted(t: TestTenant): Promise<void> {
  await expect
    .poll(
      () => t.db.prepare("SELECT COUNT(*) AS n FROM project_deletions WHERE tenant_id = ?").bind(t.tenantId).first("n"),
      { timeout: 20_000, interval: 100 },
    )
    .toBe(0);
}

/** Waits until the usage log holds at least `count` calls of a tenant: the isolate writes it FLUSH_USAGE_MS after a call. */
export async function untilLogged(tenantId: string, count: number, tool?: string, timeoutMs = 10_000): Promise<void> {
  const started = Date.now();
  while ((await loggedCalls(tenantId, tool)) < count) {
    if (Date.now() - started > timeoutMs)
      throw new Error(
        `usage log of ${tenantId} has ${await loggedCalls(tenantId, tool)} calls${tool ? ` of ${tool}` : ""} after ${timeoutMs} ms; expected ${count}`,
      );
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** Waits until no usage of a tenant arrives for 1.5 s (a flush is 50 ms in tests): every call made so far is logged. */
export async function usageLogSettled(tenantId: string): Promise<number> {
  let last = await loggedCalls(tenantId);
  let stillSince = Date.now();
  while (Date.now() - stillSince < 1_500) {
    await new Promise((r) => setTimeout(r, 100));
    const now = await loggedCalls(tenantId);
    if (now !== last) [last, stillSince] = [now, Date.now()];
  }
  return last;
}

/** Moves a tenant to another shard through the admin API (the real queue runs the move) and waits for the switch. */
export async function moveTenant(t: TestTenant, shard: string, timeoutMs = 20_000): Promise<TestTenant> {
  const started = await admin("POST", `/tenants/${t.tenantId}/move`, { shard });
  if (started.status !== 202) throw new Error(`move refused: ${started.status} ${await started.text()}`);
  const since = Date.now();
  for (;;) {
    const shown = await (await admin("GET", `/tenants/${t.tenantId}`)).json<{
      shard: string;
      move?: { state: string; error?: string };
    }>();
    if (shown.shard === shard) return { ...t, shard, db: shardDatabase(env, shard) };
    if (shown.move?.state === "failed") throw new Error(`move failed: ${shown.move.error}`);
    if (Date.now() - since > timeoutMs)
      throw new Error(`move of ${t.tenantId} not switched after ${timeoutMs} ms: ${JSON.stringify(shown.move)}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/**
 * An export's lines with what must differ between two tenants taken out: the tenant id, its import suffix, the export
 * time. Exporting an imported copy gives the original's lines so.
 */
export function normalisedExport(ndjson: string, tenantId: string): string[] {
  return ndjson
    .trimEnd()
    .split("\n")
    .map((line) =>
      line
        .replaceAll(tenantId, "<tenant>")
        .replace(/~[0-9a-f]{8}/g, "")
        .replace(/"exported_at":"[^"]+"/, '"exported_at":"<time>"'),
    );
}
