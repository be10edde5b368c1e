import { env } from "cloudflare:workers";
import { afterEach, describe, expect, it, vi } from "vitest";
import { secretEquals } from "../src/crypto";
import { ADMIN_TOKEN, admin, newKey, newTenant, request } from "./helpers";
import {
  authorizePath,
  authorizeWithKey,
  exchangeCode,
  mcpTool,
  pkce,
  REDIRECT_URI,
  redirectParams,
  refresh,
  registerClient,
  tokenRequest,
  toolResult,
} from "./oauth-flow";

// Hostile input to the OAuth endpoints and the admin API, each case refused with its exact answer and
// nothing issued or redirected. Covered elsewhere, and not repeated here:
// - a code used twice (and the tokens of its first use): test/oauth.test.ts "a code used twice, and then the
//   tokens from its first use too";
// - tokens and refresh tokens of a revoked key: test/oauth.test.ts "tokens and refresh tokens of a revoked key
//   even when its grants were not removed" and "the OAuth flow";
// - a wrong code_verifier, an expired code, PKCE plain or absent at the authorization request, a token for
//   another resource: test/oauth.test.ts "the OAuth flow refuses";
// - a forged consent form (no browser cookie, another origin, a handle used twice) and the consent page's
//   own anti-framing headers: test/oauth-consent.test.ts "the consent page".

const manual: RequestInit = { redirect: "manual" };

/** A request the worker answered with a page of its own: status, no redirect, and the page's text. */
async function refusedPage(response: Response, status: number, text: RegExp): Promise<void> {
  const body = await response.text();
  expect(response.status, body).toBe(status);
  expect(response.headers.get("location")).toBeNull();
  expect(body).toMatch(text);
}

/** An OAuth error from the token or registration endpoint, with no token or client in it. */
async function oauthError(response: Response, status: number, error: string): Promise<any> {
  const body = await response.json<any>();
  expect(response.status, JSON.stringify(body)).toBe(status);
  expect(body.error).toBe(error);
  expect(body.access_token).toBeUndefined();
  expect(body.refresh_token).toBeUndefined();
  expect(body.client_id).toBeUndefined();
  return body;
}

describe("replayed tokens", () => {
  it("an access token, a refresh token and a pending code after their tenant is deleted", async () => {
    const t = await newTenant();
    const { client, code, verifier } = await authorizeWithKey(t.apiKey);
    const tokens = await exchangeCode(client, code, verifier);
    const pending = await authorizeWithKey(t.apiKey, { client: await registerClient() });
    await toolResult(await mcpTool(tokens.access_token, "ping"));

    const deleted = await admin("DELETE", `/tenants/${t.tenantId}`);
    expect([200, 202]).toContain(deleted.status);

    const replayed = await mcpTool(tokens.access_token, "ping");
    expect(replayed.status).toBe(401);
    expect(replayed.headers.get("www-authenticate")).toContain('error="invalid_token"');
    await oauthError(await refresh(client, tokens.refresh_token), 400, "invalid_grant");
    const redeemed = await tokenRequest({
      grant_type: "authorization_code",
      code: pending.code,
      code_verifier: pending.verifier,
      client_id: pending.client.client_id,
      redirect_uri: REDIRECT_URI,
    });
    await oauthError(redeemed, 400, "invalid_grant");
  });
});

describe("PKCE at the token step", () => {
  it("a code redeemed without code_verifier", async () => {
    const t = await newTenant();
    const { client, code } = await authorizeWithKey(t.apiKey);
    const body = await oauthError(
      await tokenRequest({
        grant_type: "authorization_code",
        code,
        client_id: client.client_id,
        redirect_uri: REDIRECT_URI,
      }),
      400,
      "invalid_request",
    );
    expect(body.error_description).toMatch(/code_verifier/);
  });

  it("a code_verifier equal to the challenge (what the plain method would accept)", async () => {
    const t = await newTenant();
    const { client, code, verifier } = await authorizeWithKey(t.apiKey);
    const challenge = await s256(verifier); // what the authorization request carried, in the open
    const body = await oauthError(
      await tokenRequest({
        grant_type: "authorization_code",
        code,
        code_verifier: challenge,
        client_id: client.client_id,
        redirect_uri: REDIRECT_URI,
      }),
      400,
      "invalid_grant",
    );
    expect(body.error_description).toMatch(/code_verifier/);
  });

  it("an authorization request with a code_challenge but no method (plain by default)", async () => {
    const client = await registerClient();
    const { challenge } = await pkce();
    const response = await request(
      authorizePath({ client_id: client.client_id, redirect_uri: REDIRECT_URI, code_challenge: challenge }),
      manual,
    );
    const params = redirectParams(response);
    expect(params.get("error")).toBe("invalid_request");
    expect(params.get("error_description")).toMatch(/plain/i);
    expect(params.get("code")).toBeNull();
  });
});

async function s256(verifier: string): Promise<string> {
  const digest = new Uint8Array(await crypto.subtle.digest("SHA-256", new TextEncoder().encode(verifier)));
  return btoa(String.fromCharCode(...digest))
    .replace(/\+/g, "-")
    .replace(/\//g, "_")
    .replace(/=+$/, "");
}

describe("made-up authorization codes", () => {
  it("a real key and grant with another secret, a real code presented by another client, a code of the wrong shape", async () => {
    const t = await newTenant();
    const { client, code, verifier } = await authorizeWithKey(t.apiKey);
    const [keyId, grantId, secret] = code.split(":");
    expect(keyId).toBe(t.keyId);
    const forged = `${keyId}:${grantId}:${"A".repeat(secret!.length)}`;
    await oauthError(
      await tokenRequest({
        grant_type: "authorization_code",
        code: forged,
        code_verifier: verifier,
        client_id: client.client_id,
        redirect_uri: REDIRECT_URI,
      }),
      400,
      "invalid_grant",
    );
    const other = await registerClient();
    await oauthError(
      await tokenRequest({
        grant_type: "authorization_code",
        code,
        code_verifier: verifier,
        client_id: other.client_id,
        redirect_uri: REDIRECT_URI,
      }),
      400,
      "invalid_grant",
    );
    for (const shape of [`${keyId}:${grantId}`, `${keyId}::`, "::", "a".repeat(2000)]) {
      await oauthError(
        await tokenRequest({
          grant_type: "authorization_code",
          code: shape,
          code_verifier: verifier,
          client_id: client.client_id,
          redirect_uri: REDIRECT_URI,
        }),
        400,
        "invalid_grant",
      );
    }
    await exchangeCode(client, code, verifier); // none of these spent the real code
  });
});

describe("redirect URIs", () => {
  it("at authorization, look-alikes of the registered URI are shown on a page, never redirected to", async () => {
    const client = await registerClient();
    const { challenge } = await pkce();
    const lookAlikes = [
      "https://connector.example/oauth/callback/../../evil",
      "https://connector.example/oauth/callback/",
      "https://connector.example/oauth/callback?next=https://evil.example",
      "https://connector.example/OAUTH/callback",
      "https://connector.example.evil.example/oauth/callback",
      "https://connector.example@evil.example/oauth/callback",
      "https://evil.example/oauth/callback",
      "http://connector.example/oauth/callback",
      "//evil.example/oauth/callback",
      "javascript:alert(1)",
    ];
    for (const redirectUri of lookAlikes) {
      const response = await request(
        authorizePath({
          client_id: client.client_id,
          redirect_uri: redirectUri,
          code_challenge: challenge,
          code_challenge_method: "S256",
        }),
        manual,
      );
      await refusedPage(response, 400, /redirect/i);
    }
  });

  it("at registration: javascript:, data:, file:, vbscript:, http on a public host, a fragment, userinfo, a relative URI", async () => {
    const before = (await env.OAUTH_KV.list({ prefix: "client:" })).keys.length;
    const dangerous = [
      "javascript:alert(document.cookie)",
      "data:text/html,<script>alert(1)</script>",
      "file:///etc/passwd",
      "vbscript:msgbox(1)",
      "http://evil.example/callback",
      "https://connector.example/callback#fragment",
      "https://connector.example/callback#",
      "https://user:pass@connector.example/callback",
      "/relative/callback",
      "",
    ];
    for (const uri of dangerous) {
      const response = await request("/oauth/register", {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ client_name: "Hostile", redirect_uris: [uri], token_endpoint_auth_method: "none" }),
      });
      const body = await response.json<any>();
      expect(response.status, `${uri}: ${JSON.stringify(body)}`).toBe(400);
      expect(body.error, uri).toMatch(/^invalid_(redirect_uri|client_metadata)$/);
      expect(body.client_id).toBeUndefined();
    }
    expect((await env.OAUTH_KV.list({ prefix: "client:" })).keys.length).toBe(before);
  });
});

describe("pages that cannot be framed", () => {
  it("the error pages of /oauth/authorize send frame-ancestors 'none' and X-Frame-Options DENY, as the consent page does", async () => {
    const pages = [
      await request(authorizePath({ client_id: "no-such-client", redirect_uri: REDIRECT_URI }), manual),
      await request("/oauth/authorize", {
        method: "POST",
        headers: { "content-type": "application/x-www-form-urlencoded" },
        body: "handle=made-up&decision=approve",
        redirect: "manual",
      }),
    ];
    for (const page of pages) {
      expect(page.status).toBe(400);
      expect(page.headers.get("content-security-policy")).toContain("frame-ancestors 'none'");
      expect(page.headers.get("x-frame-options")).toBe("DENY");
    }
  });
});

// Client ID metadata documents: the library fetches the client_id URL with the global fetch, which the
// tests replace; every document is on its own URL, so nothing comes from the CIMD cache.
let documents = 0;
const clientUrl = (host = "app.example") => `https://${host}/oauth/hostile-${Date.now()}-${++documents}.json`;
const urlOf = (input: RequestInfo | URL) => (input instanceof Request ? input.url : String(input));

function documentFor(clientId: string, overrides: Record<string, unknown> = {}) {
  return {
    client_id: clientId,
    client_name: "Hostile App",
    redirect_uris: [REDIRECT_URI],
    token_endpoint_auth_method: "none",
    grant_types: ["authorization_code", "refresh_token"],
    response_types: ["code"],
    ...overrides,
  };
}

async function authorizeAs(clientId: string, redirectUri = REDIRECT_URI): Promise<Response> {
  const { challenge } = await pkce();
  return request(
    authorizePath({
      client_id: clientId,
      redirect_uri: redirectUri,
      code_challenge: challenge,
      code_challenge_method: "S256",
    }),
    manual,
  );
}

const UNVERIFIED = /could not be verified/;

describe("client ID metadata documents", () => {
  afterEach(() => {
    vi.useRealTimers();
    vi.restoreAllMocks();
  });

  it("on an internal or special-use host, or an IP address: refused without being fetched; at the token endpoint too", async () => {
    // Every URL answers a valid document for itself: only the host policy can refuse.
    const outbound = vi
      .spyOn(globalThis, "fetch")
      .mockImplementation(async (input) => Response.json(documentFor(urlOf(input))));
    const hosts = [
      "localhost",
      "app.localhost",
      "127.0.0.1",
      "2130706433", // 127.0.0.1 spelled as one number
      "10.1.2.3",
      "192.168.0.10",
      "169.254.169.254",
      "[::1]",
      "[fd00::1]",
      "[::ffff:127.0.0.1]",
      "metadata.google.internal",
      "printer.local",
      "router.home.arpa",
      "intranet",
      "localhost.",
    ];
    for (const host of hosts) {
      const clientId = clientUrl(host);
      await refusedPage(await authorizeAs(clientId), 400, UNVERIFIED);
      const token = await tokenRequest({
        grant_type: "authorization_code",
        code: "a:b:c",
        code_verifier: "v".repeat(43),
        client_id: clientId,
        redirect_uri: REDIRECT_URI,
      });
      await oauthError(token, 401, "invalid_client");
    }
    expect(outbound).not.toHaveBeenCalled();
    // A public host passes the same path (the refusals above are the host policy's).
    const clientId = clientUrl();
    expect((await authorizeAs(clientId)).status).toBe(200);
    expect(outbound).toHaveBeenCalled();
    expect(new Set(outbound.mock.calls.map(([input]) => urlOf(input)))).toEqual(new Set([clientId]));
  });

  it("on plain http: not a metadata document, an unknown client, never fetched", async () => {
    const outbound = vi
      .spyOn(globalThis, "fetch")
      .mockImplementation(async (input) => Response.json(documentFor(urlOf(input))));
    await refusedPage(await authorizeAs(clientUrl().replace("https:", "http:")), 400, /client/i);
    expect(outbound).not.toHaveBeenCalled();
  });

  it("that redirects: fetched with redirect: manual, the redirect not followed, refused", async () => {
    const clientId = clientUrl();
    const internal = "http://169.254.169.254/latest/meta-data/client.json";
    // The mock behaves as fetch does: it follows a redirect unless told redirect: "manual".
    const outbound = vi.spyOn(globalThis, "fetch").mockImplementation(async (input, init) => {
      const url = urlOf(input);
      if (url === internal) return Response.json(documentFor(clientId));
      if (url !== clientId) return new Response("not found", { status: 404 });
      const moved = new Response(null, { status: 302, headers: { location: internal } });
      const redirectMode = init?.redirect ?? (input instanceof Request ? input.redirect : "follow");
      return redirectMode === "manual" ? moved : (globalThis.fetch as typeof fetch)(internal, init);
    });
    await refusedPage(await authorizeAs(clientId), 400, UNVERIFIED);
    expect(outbound.mock.calls.map(([input]) => urlOf(input))).toEqual([clientId]);
    expect(outbound.mock.calls[0]![1]?.redirect).toBe("manual");
  });

  it("that is larger than 5 KiB, declared or streamed; one just under it is accepted", async () => {
    const declared = clientUrl();
    const streamed = clientUrl();
    const small = clientUrl();
    const padded = (clientId: string, size: number) => {
      const base = JSON.stringify(documentFor(clientId, { description: "" }));
      return JSON.stringify(documentFor(clientId, { description: "x".repeat(size - base.length) }));
    };
    vi.spyOn(globalThis, "fetch").mockImplementation(async (input) => {
      const url = urlOf(input);
      if (url === declared)
        return new Response(padded(declared, 6 * 1024), { headers: { "content-type": "application/json" } });
      if (url === small)
        return new Response(padded(small, 5 * 1024 - 100), { headers: { "content-type": "application/json" } });
      if (url === streamed) {
        // No Content-Length: 1 KiB chunks, forever.
        const chunk = new TextEncoder().encode(" ".repeat(1024));
        return new Response(new ReadableStream({ pull: (controller) => controller.enqueue(chunk) }), {
          headers: { "content-type": "application/json" },
        });
      }
      return new Response("not found", { status: 404 });
    });
    await refusedPage(await authorizeAs(declared), 400, UNVERIFIED);
    await refusedPage(await authorizeAs(streamed), 400, UNVERIFIED);
    expect((await authorizeAs(small)).status).toBe(200);
  });

  it("that answers slowly (no headers, or a body that stalls): refused when the library's 10 s bound fires, never a hang or a 500", async () => {
    // The library bounds the fetch and the body's read with one 10 s timer. Here that timer runs after 20 ms of
    // real time (a fake clock would fire it from the test, outside the request, where workerd refuses to touch
    // the request's streams); the delay it asked for is recorded.
    const realSetTimeout = globalThis.setTimeout;
    const delays: number[] = [];
    vi.spyOn(globalThis, "setTimeout").mockImplementation(((handler: () => void, ms?: number) => {
      delays.push(ms ?? 0);
      return realSetTimeout(handler, ms === 10_000 ? 20 : ms);
    }) as typeof setTimeout);
    for (const stall of ["headers", "body"] as const) {
      const clientId = clientUrl();
      let signal: AbortSignal | undefined;
      vi.spyOn(globalThis, "fetch").mockImplementation(async (_input, init) => {
        signal = init?.signal ?? undefined;
        if (stall === "headers")
          return new Promise<never>((_, reject) =>
            signal!.addEventListener("abort", () => reject(new DOMException("Aborted", "AbortError"))),
          );
        const start = new TextEncoder().encode('{"client_id":');
        return new Response(new ReadableStream({ start: (controller) => controller.enqueue(start) }), {
          headers: { "content-type": "application/json" },
        });
      });
      delays.length = 0;
      const started = Date.now();
      await refusedPage(await authorizeAs(clientId), 400, UNVERIFIED);
      expect(Date.now() - started, stall).toBeLessThan(2_000);
      expect(signal?.aborted, stall).toBe(true);
      expect(delays, stall).toContain(10_000);
    }
  });

  it("that names other redirect URIs than the one requested, or another client_id: refused, never redirected", async () => {
    const otherUris = clientUrl();
    const otherId = clientUrl();
    vi.spyOn(globalThis, "fetch").mockImplementation(async (input) => {
      const url = urlOf(input);
      if (url === otherUris)
        return Response.json(documentFor(otherUris, { redirect_uris: ["https://app.example/callback"] }));
      if (url === otherId) return Response.json(documentFor("https://app.example/oauth/someone-else.json"));
      return new Response("not found", { status: 404 });
    });
    await refusedPage(await authorizeAs(otherUris, REDIRECT_URI), 400, /redirect/i);
    await refusedPage(await authorizeAs(otherId), 400, UNVERIFIED);
    expect((await authorizeAs(otherUris, "https://app.example/callback")).status).toBe(200);
  });
});

describe("the admin API", () => {
  it("refuses what is not the admin token: wrong, a prefix, longer, another case, empty, Basic, in the query, a revoked admin key", async () => {
    const t = await newTenant({ scopes: ["admin"] });
    const revoked = await newKey(t.tenantId, { scopes: ["admin"] });
    expect((await admin("DELETE", `/keys/${revoked.keyId}`)).status).toBe(200);
    const name = `hostile ${Date.now()}`;
    const attempts: Record<string, string>[] = [
      { authorization: "Bearer wrong" },
      { authorization: `Bearer ${ADMIN_TOKEN.slice(0, -1)}` },
      { authorization: `Bearer ${ADMIN_TOKEN}x` },
      { authorization: `Bearer ${ADMIN_TOKEN.toUpperCase()}` },
      { authorization: "Bearer " },
      { authorization: `Basic ${btoa(`admin:${ADMIN_TOKEN}`)}` },
      { authorization: ADMIN_TOKEN },
      { authorization: `Bearer ${revoked.apiKey}` },
      {},
    ];
    for (const headers of attempts) {
      const response = await request("/admin/tenants", {
        method: "POST",
        headers: { "content-type": "application/json", ...headers },
        body: JSON.stringify({ name }),
      });
      expect(response.status, JSON.stringify(headers)).toBe(401);
      expect(response.headers.get("www-authenticate")).toBe('Bearer realm="context-edge-admin"');
      expect(await response.json()).toMatchObject({ error: { code: "PERMISSION_DENIED" } });
    }
    const inQuery = await request(`/admin/tenants?token=${ADMIN_TOKEN}&access_token=${ADMIN_TOKEN}`, {
      method: "POST",
      body: JSON.stringify({ name }),
    });
    expect(inQuery.status).toBe(401);
    const tenants = await (await admin("GET", "/tenants")).json<{ tenants: { name: string }[] }>();
    expect(tenants.tenants.filter((x) => x.name === name)).toEqual([]);
  });

  it("compares the admin token in constant time: SHA-256 of both sides, then crypto.subtle.timingSafeEqual", async () => {
    const compared = vi.spyOn(crypto.subtle, "timingSafeEqual");
    try {
      expect((await admin("GET", "/tenants", undefined, "x")).status).toBe(401);
      expect((await admin("GET", "/tenants", undefined, ADMIN_TOKEN.repeat(50))).status).toBe(401);
      expect((await admin("GET", "/tenants")).status).toBe(200);
      expect(compared).toHaveBeenCalledTimes(3);
      for (const [a, b] of compared.mock.calls) {
        expect([(a as ArrayBuffer).byteLength, (b as ArrayBuffer).byteLength]).toEqual([32, 32]);
      }
      expect(compared.mock.results.map((r) => r.value)).toEqual([false, false, true]);
    } finally {
      compared.mockRestore();
    }
  });
});

describe("secretEquals", () => {
  it("is true for equal strings only, whatever their lengths", async () => {
    expect(await secretEquals("test-admin-token", "test-admin-token")).toBe(true);
    expect(await secretEquals("", "")).toBe(true);
    expect(await secretEquals("clé ☃", "clé ☃")).toBe(true);
    expect(await secretEquals("test-admin-token", "test-admin-tokeN")).toBe(false);
    expect(await secretEquals("test-admin-token", "test-admin-toke")).toBe(false);
    expect(await secretEquals("test-admin-token", "test-admin-token\0")).toBe(false);
    expect(await secretEquals("", "x")).toBe(false);
    expect(await secretEquals("a".repeat(10_000), `${"a".repeat(9_999)}b`)).toBe(false);
  });
});
