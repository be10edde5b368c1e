import { env, exports } from "cloudflare:workers";
import { describe, expect, it, vi } from "vitest";
import { admin, BASE, jsonrpc, mcpPost, newTenant, request } from "./helpers";
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
  type Tokens,
  tokenRequest,
  toolResult,
} from "./oauth-flow";
import { adminWith } from "./ownership-fixtures";

// OAuth 2.1 for hosted connectors, through the worker's real routes: discovery, the whole flow, and
// every way a request must be refused.

const listTools = { jsonrpc: "2.0", id: 1, method: "tools/list" };
/** A redirect back to the connector is the answer itself: don't follow it. */
const manual: RequestInit = { redirect: "manual" };

describe("OAuth discovery", () => {
  it("publishes RFC 9728 metadata for /mcp naming this server as its authorization server", async () => {
    const response = await request("/.well-known/oauth-protected-resource/mcp");
    expect(response.status).toBe(200);
    expect(await response.json()).toEqual({
      resource: `${BASE}/mcp`,
      authorization_servers: [BASE],
      scopes_supported: ["read", "write"],
      bearer_methods_supported: ["header"],
      resource_name: "Context Edge",
    });
  });

  it("publishes RFC 8414 metadata: S256 only, registration, client ID metadata documents, iss", async () => {
    const response = await request("/.well-known/oauth-authorization-server");
    expect(response.status).toBe(200);
    const metadata = await response.json<any>();
    expect(metadata).toMatchObject({
      issuer: BASE,
      authorization_endpoint: `${BASE}/oauth/authorize`,
      token_endpoint: `${BASE}/oauth/token`,
      registration_endpoint: `${BASE}/oauth/register`,
      revocation_endpoint: `${BASE}/oauth/token`,
      response_types_supported: ["code"],
      code_challenge_methods_supported: ["S256"],
      client_id_metadata_document_supported: true,
      authorization_response_iss_parameter_supported: true,
      scopes_supported: ["read", "write"],
      protected_resources: [`${BASE}/mcp`],
    });
    expect(metadata.grant_types_supported).toEqual(expect.arrayContaining(["authorization_code", "refresh_token"]));
  });

  it("answers an unauthenticated /mcp with 401 and a Bearer challenge naming the resource metadata", async () => {
    const response = await mcpPost(null, listTools);
    expect(response.status).toBe(401);
    expect(response.headers.get("www-authenticate")).toBe(
      `Bearer realm="context-edge", resource_metadata="${BASE}/.well-known/oauth-protected-resource/mcp", scope="read write"`,
    );
    const invalid = await mcpPost("not-a-token", listTools);
    expect(invalid.status).toBe(401);
    expect(invalid.headers.get("www-authenticate")).toContain('error="invalid_token"');
    expect(invalid.headers.get("www-authenticate")).toContain("resource_metadata=");
  });

  it("the key-only URL and /jsonrpc advertise no OAuth", async () => {
    const keyOnly = await request("/mcp-key", {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify(listTools),
    });
    expect(keyOnly.status).toBe(401);
    expect(keyOnly.headers.get("www-authenticate")).not.toContain("resource_metadata");
    expect((await request("/.well-known/oauth-protected-resource/mcp-key")).status).toBe(404);
    expect((await request("/.well-known/oauth-protected-resource")).status).toBe(404);
    const rpc = await jsonrpc("", listTools);
    expect(rpc.headers.get("www-authenticate")).not.toContain("resource_metadata");
    const t = await newTenant();
    const listed = await request("/mcp-key?toolsets=all", {
      method: "POST",
      headers: { "content-type": "application/json", accept: "application/json", authorization: `Bearer ${t.apiKey}` },
      body: JSON.stringify(listTools),
    });
    expect(listed.status).toBe(200);
    expect((await listed.json<any>()).result.tools.length).toBeGreaterThan(20);
  });
});

describe("the OAuth flow", () => {
  it("register -> authorize with PKCE -> consent with a key -> code -> token -> tools -> refresh -> revoke the key -> 401", async () => {
    const t = await newTenant({ scopes: ["read", "write"] });
    const { client, code, verifier, params } = await authorizeWithKey(t.apiKey);
    expect(params.get("state")).toBe("st-123");
    expect(params.get("iss")).toBe(BASE); // RFC 9207

    const tokens = await exchangeCode(client, code, verifier);
    expect(tokens).toMatchObject({
      token_type: "bearer",
      expires_in: 3600,
      scope: "read write",
      resource: `${BASE}/mcp`,
    });
    expect(tokens.refresh_token).toBeTruthy();

    const listed = await mcpPost(tokens.access_token, listTools, { accept: "application/json" });
    expect(listed.status).toBe(200);
    expect((await listed.json<any>()).result.tools.map((x: any) => x.name)).toContain("memory_store");
    const stored = await toolResult(
      await mcpTool(tokens.access_token, "memory_store", { content: "Connectors sign in with OAuth" }),
    );
    const found = await toolResult(await mcpTool(t.apiKey, "search", { query: "connectors OAuth" }));
    expect(found.results.map((r: any) => r.item_id)).toContain(stored.id); // the token wrote into the key's tenant
    // The usage log records a call under the key the person signed in with, as for the key itself (a failed call keeps
    // its row; the rest are summed by hour).
    await mcpTool(tokens.access_token, "memory_store", {});
    const logged = () =>
      t.db
        .prepare(
          "SELECT key_id FROM tool_calls WHERE tenant_id = ? AND tool = 'memory_store' AND error_code IS NOT NULL",
        )
        .bind(t.tenantId)
        .all();
    await expect.poll(async () => (await logged()).results, { timeout: 10_000 }).toEqual([{ key_id: t.keyId }]);

    // Refresh rotates: a new pair each time; once the new refresh token has been used, the old one is refused.
    const first = await refresh(client, tokens.refresh_token);
    expect(first.status).toBe(200);
    const rotated = await first.json<Tokens>();
    expect(rotated.refresh_token).not.toBe(tokens.refresh_token);
    expect(rotated.access_token).not.toBe(tokens.access_token);
    const second = await (await refresh(client, rotated.refresh_token)).json<Tokens>();
    const replay = await refresh(client, tokens.refresh_token);
    expect(replay.status).toBe(400);
    expect(await replay.json()).toMatchObject({ error: "invalid_grant" });
    await toolResult(await mcpTool(second.access_token, "ping"));

    const revoked = await admin("DELETE", `/keys/${t.keyId}`);
    expect(await revoked.json()).toMatchObject({ key_id: t.keyId, oauth_grants_revoked: 1 });
    const after = await mcpTool(second.access_token, "ping");
    expect(after.status).toBe(401);
    expect(after.headers.get("www-authenticate")).toContain('error="invalid_token"');
    expect((await refresh(client, second.refresh_token)).status).toBe(400);
  });
});

describe("the OAuth flow refuses", () => {
  it("an authorization request without PKCE, or with the plain method, from public and confidential clients", async () => {
    const publicClient = await registerClient();
    const confidential = await registerClient({ token_endpoint_auth_method: "client_secret_basic" });
    expect(confidential.client_secret).toBeTruthy();
    for (const client of [publicClient, confidential]) {
      const noPkce = await request(
        authorizePath({ client_id: client.client_id, redirect_uri: client.redirect_uris[0] }),
        manual,
      );
      const params = redirectParams(noPkce);
      expect(params.get("error")).toBe("invalid_request");
      expect(params.get("error_description")).toMatch(/PKCE|code_challenge/i);
      expect(params.get("state")).toBe("st-123");
      expect(params.get("iss")).toBe(BASE);
    }
    const plain = await request(
      authorizePath({
        client_id: publicClient.client_id,
        redirect_uri: REDIRECT_URI,
        code_challenge: "abc",
        code_challenge_method: "plain",
      }),
      manual,
    );
    expect(redirectParams(plain).get("error")).toBe("invalid_request");
  });

  it("a wrong code_verifier", async () => {
    const t = await newTenant();
    const { client, code, verifier } = await authorizeWithKey(t.apiKey);
    const wrong = await tokenRequest({
      grant_type: "authorization_code",
      code,
      code_verifier: (await pkce()).verifier,
      client_id: client.client_id,
      redirect_uri: REDIRECT_URI,
    });
    expect(wrong.status).toBe(400);
    expect(await wrong.json()).toMatchObject({ error: "invalid_grant" });
    const missing = await tokenRequest({
      grant_type: "authorization_code",
      code,
      client_id: client.client_id,
      redirect_uri: REDIRECT_URI,
    });
    expect(await missing.json()).toMatchObject({ error: "invalid_request" });
    await exchangeCode(client, code, verifier); // the right verifier still redeems it
  });

  it("a redirect URI the client did not register: shown on the page, never redirected; and a different one at the token endpoint", async () => {
    const client = await registerClient({ redirect_uris: [REDIRECT_URI, "https://connector.example/other"] });
    const { challenge } = await pkce();
    const evil = await request(
      authorizePath({
        client_id: client.client_id,
        redirect_uri: "https://evil.example/steal",
        code_challenge: challenge,
        code_challenge_method: "S256",
      }),
      manual,
    );
    expect(evil.status).toBe(400);
    expect(evil.headers.get("location")).toBeNull();
    expect(await evil.text()).toMatch(/redirect/i);

    const t = await newTenant();
    const { code, verifier } = await authorizeWithKey(t.apiKey, { client });
    const other = await tokenRequest({
      grant_type: "authorization_code",
      code,
      code_verifier: verifier,
      client_id: client.client_id,
      redirect_uri: "https://connector.example/other",
    });
    expect(other.status).toBe(400);
    expect(await other.json()).toMatchObject({ error: "invalid_grant" });
  });

  it("an expired code", async () => {
    const t = await newTenant();
    const { client, code, verifier } = await authorizeWithKey(t.apiKey);
    // A code lives in its grant's KV record, which KV expires 10 minutes after the consent...
    const { keys } = await env.OAUTH_KV.list({ prefix: `grant:${t.keyId}:` });
    expect(keys).toHaveLength(1);
    expect(keys[0]!.expiration! - Date.now() / 1000).toBeLessThanOrEqual(600);
    // ...so an expired code is one whose record KV has dropped.
    await env.OAUTH_KV.delete(keys[0]!.name);
    const expired = await tokenRequest({
      grant_type: "authorization_code",
      code,
      code_verifier: verifier,
      client_id: client.client_id,
      redirect_uri: REDIRECT_URI,
    });
    expect(expired.status).toBe(400);
    expect(await expired.json()).toMatchObject({ error: "invalid_grant" });
  });

  it("a code used twice, and then the tokens from its first use too", async () => {
    const t = await newTenant();
    const { client, code, verifier } = await authorizeWithKey(t.apiKey);
    const tokens = await exchangeCode(client, code, verifier);
    await toolResult(await mcpTool(tokens.access_token, "ping"));
    const again = await tokenRequest({
      grant_type: "authorization_code",
      code,
      code_verifier: verifier,
      client_id: client.client_id,
      redirect_uri: REDIRECT_URI,
    });
    expect(again.status).toBe(400);
    expect(await again.json()).toMatchObject({ error: "invalid_grant" });
    expect((await mcpTool(tokens.access_token, "ping")).status).toBe(401);
  });

  it("a token for another resource: another origin of this worker, /jsonrpc, /mcp-key; and a request naming another resource", async () => {
    const t = await newTenant();
    const { client, code, verifier } = await authorizeWithKey(t.apiKey);
    const tokens = await exchangeCode(client, code, verifier);
    const body = JSON.stringify(listTools);
    const headers = {
      authorization: `Bearer ${tokens.access_token}`,
      "content-type": "application/json",
      accept: "application/json",
    };
    const elsewhere = await exports.default.fetch(
      new Request("http://127.0.0.1/mcp", { method: "POST", headers, body }),
    );
    expect(elsewhere.status).toBe(401);
    expect(elsewhere.headers.get("www-authenticate")).toContain(
      'resource_metadata="http://127.0.0.1/.well-known/oauth-protected-resource/mcp"',
    );
    expect((await jsonrpc(tokens.access_token, listTools)).status).toBe(401);
    expect((await request("/mcp-key", { method: "POST", headers, body })).status).toBe(401);
    expect((await mcpPost(tokens.access_token, listTools, { accept: "application/json" })).status).toBe(200);

    const { challenge } = await pkce();
    const other = await request(
      authorizePath({
        client_id: client.client_id,
        redirect_uri: REDIRECT_URI,
        code_challenge: challenge,
        code_challenge_method: "S256",
        resource: "https://elsewhere.example/mcp",
      }),
      manual,
    );
    expect(redirectParams(other).get("error")).toBe("invalid_target");
    const second = await authorizeWithKey(t.apiKey, { client });
    const retarget = await tokenRequest({
      grant_type: "authorization_code",
      code: second.code,
      code_verifier: second.verifier,
      client_id: client.client_id,
      redirect_uri: REDIRECT_URI,
      resource: "https://elsewhere.example/mcp",
    });
    expect(retarget.status).toBe(400);
    expect(await retarget.json()).toMatchObject({ error: "invalid_target" });
  });

  it("an access token after its hour", async () => {
    const t = await newTenant();
    const { client, code, verifier } = await authorizeWithKey(t.apiKey);
    const tokens = await exchangeCode(client, code, verifier);
    vi.useFakeTimers({ now: Date.now() + 3601_000, toFake: ["Date"] });
    try {
      expect((await mcpTool(tokens.access_token, "ping")).status).toBe(401);
    } finally {
      vi.useRealTimers();
    }
    await toolResult(await mcpTool(tokens.access_token, "ping"));
  });

  it("tokens and refresh tokens of a revoked key even when its grants were not removed", async () => {
    const t = await newTenant();
    const { client, code, verifier } = await authorizeWithKey(t.apiKey);
    const tokens = await exchangeCode(client, code, verifier);
    const pending = await authorizeWithKey(t.apiKey, { client: await registerClient() });
    await toolResult(await mcpTool(tokens.access_token, "ping"));
    // Revoked while removing its grants from KV fails: the grants stay, as if their cleanup had failed.
    const unreachable = () => Promise.reject(new Error("KV unavailable"));
    const brokenKv = {
      get: unreachable,
      getWithMetadata: unreachable,
      put: unreachable,
      delete: unreachable,
      list: unreachable,
    } as unknown as KVNamespace;
    const revoked = await adminWith({ OAUTH_KV: brokenKv }, "DELETE", `/keys/${t.keyId}`);
    expect(await revoked.json()).toMatchObject({ key_id: t.keyId, oauth_grants_revoked: null });
    expect((await mcpTool(tokens.access_token, "ping")).status).toBe(401);
    const refreshed = await refresh(client, tokens.refresh_token);
    expect(refreshed.status).toBe(400);
    expect(await refreshed.json()).toMatchObject({
      error: "invalid_grant",
      error_description: expect.stringMatching(/revoked/),
    });
    const code2 = await tokenRequest({
      grant_type: "authorization_code",
      code: pending.code,
      code_verifier: pending.verifier,
      client_id: pending.client.client_id,
      redirect_uri: REDIRECT_URI,
    });
    expect(code2.status).toBe(400);
    // invalid_grant from the token endpoint also removed the grants it touched.
    expect((await env.OAUTH_KV.list({ prefix: `grant:${t.keyId}:` })).keys).toEqual([]);
  });
});

describe("bad input to the OAuth endpoints", () => {
  it("gets an OAuth error or a page that says what is wrong, never a 500", async () => {
    const post = (path: string, body: string, type: string) =>
      request(path, { method: "POST", headers: { "content-type": type }, body, redirect: "manual" });
    const client = await registerClient();
    const cases: [Promise<Response>, number, RegExp][] = [
      [
        post(
          "/oauth/token",
          "grant_type=authorization_code&code=a:b:c&client_id=nobody",
          "application/x-www-form-urlencoded",
        ),
        401,
        /invalid_client/,
      ],
      [post("/oauth/token", "{not json", "application/json"), 400, /invalid_request/],
      [request("/oauth/token"), 404, /NOT_FOUND/],
      [
        post(
          "/oauth/token",
          `grant_type=password&username=a&password=b&client_id=${client.client_id}`,
          "application/x-www-form-urlencoded",
        ),
        400,
        /unsupported_grant_type|unauthorized_client/,
      ],
      [
        post(
          "/oauth/token",
          `grant_type=authorization_code&code=garbage&client_id=${client.client_id}`,
          "application/x-www-form-urlencoded",
        ),
        400,
        /invalid_grant/,
      ],
      [
        post(
          "/oauth/token",
          `grant_type=refresh_token&refresh_token=a:b:c&client_id=${client.client_id}`,
          "application/x-www-form-urlencoded",
        ),
        400,
        /invalid_grant/,
      ],
      [post("/oauth/token", "x".repeat(70_000), "application/x-www-form-urlencoded"), 413, /invalid_request/],
      [post("/oauth/register", "{not json", "application/json"), 400, /invalid_/],
      [
        post(
          "/oauth/register",
          JSON.stringify({ client_name: "x", redirect_uris: ["javascript:alert(1)"] }),
          "application/json",
        ),
        400,
        /invalid_redirect_uri|invalid_client_metadata/,
      ],
      [
        post(
          "/oauth/register",
          JSON.stringify({ client_name: "x", redirect_uris: ["http://evil.example/cb"] }),
          "application/json",
        ),
        400,
        /invalid_redirect_uri|invalid_client_metadata/,
      ],
      [request("/oauth/authorize", { redirect: "manual" }), 400, /client|request/i],
      [
        request(authorizePath({ client_id: "unknown-client", redirect_uri: REDIRECT_URI }), { redirect: "manual" }),
        400,
        /client/i,
      ],
      [post("/oauth/authorize", JSON.stringify({ handle: "x" }), "application/json"), 400, /form/i],
      [
        post("/oauth/authorize", "handle=nope&decision=approve", "application/x-www-form-urlencoded"),
        400,
        /browser|expired/,
      ],
    ];
    for (const [pending, status, text] of cases) {
      const response = await pending;
      const body = await response.text();
      expect(response.status, body).toBe(status);
      expect(body).toMatch(text);
    }
  });
});

describe("an origin that cannot be an issuer", () => {
  it("plain http on a public host offers no OAuth: no metadata, no resource_metadata in the challenge; keys still work", async () => {
    const at = (path: string, init?: RequestInit) =>
      exports.default.fetch(new Request(`http://context-edge.example${path}`, init));
    expect((await at("/.well-known/oauth-protected-resource/mcp")).status).toBe(404);
    expect((await at("/.well-known/oauth-authorization-server")).status).toBe(404);
    const challenge = await at("/mcp", {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify(listTools),
    });
    expect(challenge.status).toBe(401);
    expect(challenge.headers.get("www-authenticate")).toBe('Bearer realm="context-edge"');
    const t = await newTenant();
    const listed = await at("/mcp", {
      method: "POST",
      headers: { "content-type": "application/json", accept: "application/json", authorization: `Bearer ${t.apiKey}` },
      body: JSON.stringify(listTools),
    });
    expect(listed.status).toBe(200);
  });
});
