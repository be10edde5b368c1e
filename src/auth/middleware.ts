import type { MiddlewareHandler } from "hono";
import { readConfig } from "../config";
import { BOOKMARK_HEADER } from "../control/bookmarks";
import { openControl } from "../control/control-db";
import { routeKey } from "../control/routing";
import { type AuthenticatedKey, touchApiKey } from "../control/tenants";
import { API_KEY_PREFIX } from "../core/tenants/api-keys";
import { callWeight, tenantLimits } from "../core/tenants/quotas";
import type { Env } from "../env";
import { AppError } from "../errors";
import type { AppBindings } from "../http/context";
import { jsonRpcErrorBody } from "../http/responses";
import { callerForAccessToken } from "../oauth/access-tokens";
import { oauthChallenge } from "../oauth/authorization-server";
import { openTenant } from "../open-tenant";

const LAST_USED_RESOLUTION_MS = 60_000;
/** When this isolate last recorded each key's use: the routing cache's copy of a key (and an OAuth caller made from it) keeps the old time. */
const touched = new Map<string, number>();
const RATE_LIMIT_PERIOD_SECONDS = 60;

/** Reads the key from `Authorization: Bearer` or `x-api-key`. */
export function presentedKey(headers: Headers): string | null {
  const authorization = headers.get("authorization");
  const bearer = authorization?.match(/^Bearer\s+(.+)$/i)?.[1]?.trim();
  return bearer || headers.get("x-api-key")?.trim() || null;
}

/** API key -> tenant (/jsonrpc, /mcp-key). 401 with WWW-Authenticate when the key is missing, unknown or revoked. */
export const requireApiKey = authenticate(false);

/**
 * API key or OAuth access token -> tenant (/mcp). Both end as the same caller (a key's identity, scopes and
 * projects), so scopes, projects, the rate limit and the usage log apply to both alike. The 401 names the
 * protected resource metadata, which is how a connector discovers OAuth (RFC 9728).
 */
export const requireKeyOrAccessToken = authenticate(true);

function authenticate(acceptAccessTokens: boolean): MiddlewareHandler<AppBindings> {
  return async (c, next) => {
    const secret = presentedKey(c.req.raw.headers);
    const isKey = secret?.startsWith(API_KEY_PREFIX) ?? false;
    let key: AuthenticatedKey | null = null;
    if (secret && (isKey || !acceptAccessTokens)) key = await routeKey(c.env.CONTROL, secret);
    else if (secret) key = await callerForAccessToken(c.env, c.req.url, secret);
    if (!key) {
      const message = !secret
        ? `Unauthorized: missing API key; send Authorization: Bearer <key>${acceptAccessTokens ? " (or an OAuth access token)" : ""} or x-api-key`
        : isKey || !acceptAccessTokens
          ? "Invalid or revoked API key"
          : "Invalid, expired or revoked OAuth access token";
      c.header(
        "WWW-Authenticate",
        acceptAccessTokens
          ? oauthChallenge(c.req.url, secret ? { code: "invalid_token", description: message } : undefined)
          : `Bearer realm="context-edge", error="invalid_token", error_description="${message}"`,
      );
      return c.json(jsonRpcErrorBody(-32001, message), 401);
    }
    c.set("caller", key);
    const tenant = openTenant(c.env, key, (p) => c.executionCtx.waitUntil(p), {
      projects: key.projects,
      quotas: key.quotas,
      bookmark: c.req.header(BOOKMARK_HEADER) ?? null,
    });
    c.set("scope", tenant.scope);
    c.set("services", tenant.services);
    const now = Date.now();
    const lastUsed = Math.max(key.lastUsedAt ?? 0, touched.get(key.keyId) ?? 0);
    if (now - lastUsed > LAST_USED_RESOLUTION_MS) {
      touched.delete(key.keyId);
      touched.set(key.keyId, now);
      if (touched.size > 10_000) touched.delete(touched.keys().next().value!);
      c.executionCtx.waitUntil(touchApiKey(openControl(c.env.CONTROL), key.keyId, now).catch(() => undefined));
    }
    await next();
    const bookmark = tenant.finish();
    if (bookmark) c.header(BOOKMARK_HEADER, bookmark);
  };
}

/**
 * The per-key rate limit counts tool calls, not HTTP requests: the request itself pays for its first
 * tool call (rateLimit), and the rest of a JSON-RPC batch is charged in one limiter call whose
 * `delta` is their number. One call, not one per tool call: locally each limiter call is a Durable
 * Object round trip, and a batch's calls would queue behind each other there.
 * As the binding decides, a charge is admitted while the key's count is below the limit, so one batch
 * may take the count past it, and every later request waits for the next window. `weight` units a call:
 * the tenant limit's way to enforce a tenant's calls_per_minute with one binding (callWeight).
 */
export function toolCallCharger(
  limiter: RateLimit,
  keyId: string,
  weight = 1,
): { charge(): Promise<boolean>; reserve(count: number): void } {
  return chargerOver(
    async (count) =>
      (await limiter.limit(count * weight === 1 ? { key: keyId } : { key: keyId, delta: count * weight })).success,
    true,
  );
}

/**
 * Spends a request's tool calls through `chargeCalls(count)`: the first is prepaid (the middleware charged
 * it), a batch's others are charged together once reserved, and any call past that pays for itself.
 */
function chargerOver<T>(
  chargeCalls: (count: number) => Promise<T>,
  prepaidOutcome: T,
): { charge(): Promise<T>; reserve(count: number): void } {
  let prepaid = 1;
  let batch: { unspent: number; outcome: Promise<T> } | null = null;
  return {
    reserve(count) {
      const rest = count - prepaid;
      batch = rest > 0 ? { unspent: rest, outcome: chargeCalls(rest) } : null;
    },
    async charge() {
      if (prepaid > 0) {
        prepaid--;
        return prepaidOutcome;
      }
      if (batch && batch.unspent > 0) {
        batch.unspent--;
        return batch.outcome;
      }
      return chargeCalls(1);
    },
  };
}

/**
 * The tenant's calls_per_minute on TENANT_RATE_LIMITER, keyed by tenant id, so every key of the tenant spends
 * from one count: each call costs `weight` units of the binding's limit (TENANT_CALLS_PER_MINUTE), which makes a
 * lower per-tenant limit with one binding. Null when the deployment has no such binding or the tenant's limit
 * is lifted ("unlimited").
 */
export function tenantCallLimit(
  env: Env,
  caller: AuthenticatedKey,
): { limiter: RateLimit; weight: number; limit: number } | null {
  const limiter = env.TENANT_RATE_LIMITER;
  if (!limiter) return null;
  const defaults = readConfig(env).quotas;
  const limit = tenantLimits(defaults, caller.quotas).calls_per_minute;
  return limit === null ? null : { limiter, weight: callWeight(defaults.calls_per_minute, limit), limit };
}

function keyRateLimited(): AppError {
  return new AppError(
    "RATE_LIMITED",
    `Rate limit exceeded for this API key (each tool call counts, batched or not); retry after ${RATE_LIMIT_PERIOD_SECONDS} seconds`,
    {
      retry_after_seconds: RATE_LIMIT_PERIOD_SECONDS,
    },
  );
}

function tenantRateLimited(limit: number): AppError {
  return new AppError(
    "RATE_LIMITED",
    `Tenant quota exceeded: tool calls per minute (calls_per_minute) is ${limit} for this tenant, across all its API keys (each tool call counts, batched or not); retry after ${RATE_LIMIT_PERIOD_SECONDS} seconds`,
    { quota: "calls_per_minute", limit, retry_after_seconds: RATE_LIMIT_PERIOD_SECONDS },
  );
}

/**
 * Charges `count` tool calls to the key, then, only if the key admitted them, to its tenant: a key over its own
 * limit spends none of its tenant's, so one runaway client does not lock out the tenant's other keys. Null when
 * both admit the calls, else the error that refuses them.
 */
async function chargeKeyAndTenant(
  env: Env,
  caller: AuthenticatedKey,
  tenant: ReturnType<typeof tenantCallLimit>,
  count: number,
): Promise<AppError | null> {
  const key = await env.RATE_LIMITER.limit(count === 1 ? { key: caller.keyId } : { key: caller.keyId, delta: count });
  if (!key.success) return keyRateLimited();
  if (!tenant) return null;
  const units = count * tenant.weight;
  const own = await tenant.limiter.limit(
    units === 1 ? { key: caller.tenantId } : { key: caller.tenantId, delta: units },
  );
  return own.success ? null : tenantRateLimited(tenant.limit);
}

/**
 * What a request charges for its tool calls: each call on the key's limit and the tenant's. The request has
 * paid its first call in `rateLimit`; `charge` answers null, or the error that refuses the call.
 */
export function toolCallChargers(
  env: Env,
  caller: AuthenticatedKey,
): { charge(): Promise<AppError | null>; reserve(count: number): void } {
  const tenant = tenantCallLimit(env, caller);
  return chargerOver((count) => chargeKeyAndTenant(env, caller, tenant, count), null);
}

/** Per-key and per-tenant rate limits (RATE_LIMITER, TENANT_RATE_LIMITER) on the request's first tool call: 429 with Retry-After. */
export const rateLimit: MiddlewareHandler<AppBindings> = async (c, next) => {
  const caller = c.get("caller");
  const refusal = await chargeKeyAndTenant(c.env, caller, tenantCallLimit(c.env, caller), 1);
  if (refusal) {
    c.header("Retry-After", String(RATE_LIMIT_PERIOD_SECONDS));
    // The tenant's refusal has the per-key shape and names its quota (data: {code, details: {quota, limit, retry_after_seconds}}).
    const tenant = refusal.details.quota !== undefined;
    return c.json(
      jsonRpcErrorBody(
        -32029,
        tenant
          ? refusal.message
          : `Rate limit exceeded for this API key; retry after ${RATE_LIMIT_PERIOD_SECONDS} seconds`,
        tenant ? refusal.toJSON().error : undefined,
      ),
      429,
    );
  }
  await next();
};
