import { env } from "cloudflare:workers";
import { afterEach, describe, expect, it, vi } from "vitest";
import { admin, BASE, insideOneRateWindow, jsonrpc, newKey, newTenant, request } from "./helpers";
import {
  authorizePath,
  authorizeWithKey,
  exchangeCode,
  mcpTool,
  openConsent,
  pkce,
  postConsent,
  REDIRECT_URI,
  readConsent,
  redirectParams,
  registerClient,
  toolResult,
} from "./oauth-flow";

// The consent page (what it shows, how it resists forgery and hostile clients), what a grant may reach,
// and the admin API for grants.

async function consentFor(clientName: string, scope = "read write") {
  const client = await registerClient({ client_name: clientName });
  const { challenge, verifier } = await pkce();
  const page = await openConsent(
    authorizePath({
      client_id: client.client_id,
      redirect_uri: REDIRECT_URI,
      code_challenge: challenge,
      code_challenge_method: "S256",
      scope,
    }),
  );
  return { client, verifier, page };
}

describe("the consent page", () => {
  it("shows the client's name as inert text, its redirect host and the requested scopes, under a no-script policy", async () => {
    const hostile = `<img src=x onerror=alert(1)><script>alert(2)</script>"'&`;
    const { page } = await consentFor(hostile, "read write offline_access");
    expect(page.response.status).toBe(200);
    expect(page.html).not.toContain("<img");
    expect(page.html).not.toContain("<script");
    expect(page.html).toContain(
      "&#60;img src=x onerror=alert(1)&#62;&#60;script&#62;alert(2)&#60;/script&#62;&#34;&#39;&#38;",
    );
    expect(page.html).toContain("connector.example");
    expect(page.html).toMatch(/<code>read<\/code> <code>write<\/code> <code>offline_access<\/code>/);
    expect(page.html).toContain("This app registered itself");
    const csp = page.response.headers.get("content-security-policy")!;
    expect(csp).toContain("default-src 'none'");
    expect(csp).not.toContain("script-src");
    expect(csp).toContain("frame-ancestors 'none'");
    expect(csp).toContain("form-action 'self' https://connector.example");
    expect(page.response.headers.get("x-frame-options")).toBe("DENY");
    expect(page.response.headers.get("cache-control")).toBe("no-store");
    expect(page.cookie).toMatch(/^__Host-oauth-consent-[0-9a-f]+=[0-9a-f]+$/);
  });

  it("refuses a forged form: no browser cookie, another origin, a handle used twice", async () => {
    const t = await newTenant();
    const { page } = await consentFor("App");
    const noCookie = await postConsent({ handle: page.handle, cookie: "" }, { apiKey: t.apiKey });
    expect(noCookie.status).toBe(400);
    expect(await noCookie.text()).toContain("not started in this browser");
    const crossSite = await request("/oauth/authorize", {
      method: "POST",
      headers: {
        "content-type": "application/x-www-form-urlencoded",
        cookie: page.cookie,
        origin: "https://evil.example",
      },
      body: new URLSearchParams({ handle: page.handle, decision: "approve", api_key: t.apiKey, scope: "write" }),
      redirect: "manual",
    });
    expect(crossSite.status).toBe(403);
    expect(redirectParams(await postConsent(page, { apiKey: t.apiKey })).get("code")).toBeTruthy();
    const twice = await postConsent(page, { apiKey: t.apiKey });
    expect(twice.status).toBe(400);
    expect(await twice.text()).toContain("expired or was already used");
  });

  it("deny sends the client access_denied with its state and iss", async () => {
    const { page } = await consentFor("App");
    const params = redirectParams(await postConsent(page, { decision: "deny" }));
    expect(params.get("error")).toBe("access_denied");
    expect(params.get("state")).toBe("st-123");
    expect(params.get("iss")).toBe(BASE);
    expect(params.get("code")).toBeNull();
  });

  it("asks again, with a fresh form, for a wrong or read-only key, no scope, or a project the key cannot reach", async () => {
    const t = await newTenant({ projects: ["alpha", "beta"] });
    const readOnly = await newKey(t.tenantId, { scopes: ["read"], projects: ["alpha"] });
    let page = (await consentFor("App")).page;
    for (const [fields, message] of [
      [{ apiKey: "" }, "Paste an API key"],
      [{ apiKey: "ce_wrong" }, "not valid or has been revoked"],
      [{ apiKey: readOnly.apiKey }, "only the read scope"],
      [{ apiKey: t.apiKey, scopes: [] }, "at least one scope"],
      [
        { apiKey: t.apiKey, projects: "alpha, gamma" },
        "cannot reach project &#39;gamma&#39; (it reaches: alpha, beta)",
      ],
    ] as const) {
      const response = await postConsent(page, fields);
      expect(response.status).toBe(400);
      const next = await readConsent(response, page.cookie);
      expect(next.html).toContain(message);
      expect(next.html).not.toContain(t.apiKey); // a pasted key is never echoed back
      expect(next.handle).not.toBe(page.handle);
      page = next;
    }
    const params = redirectParams(await postConsent(page, { apiKey: t.apiKey, scopes: ["read"], projects: "beta" }));
    expect(params.get("code")).toBeTruthy();
  });
});

describe("what a grant reaches", () => {
  it("scopes and projects narrowed on the consent page bind the token, as they would a key", async () => {
    const t = await newTenant({ scopes: ["read", "write"] });
    const readOnly = await authorizeWithKey(t.apiKey, { scopes: ["read"] });
    const reader = await exchangeCode(readOnly.client, readOnly.code, readOnly.verifier);
    expect(reader.scope).toBe("read");
    await toolResult(await mcpTool(reader.access_token, "search", { query: "anything" }));
    const denied = await (await mcpTool(reader.access_token, "memory_store", { content: "a fact" })).json<any>();
    expect(denied.result.isError).toBe(true);
    expect(denied.result.content[0].text).toMatch(/PERMISSION_DENIED.*'write' scope/);

    const alphaOnly = await authorizeWithKey(t.apiKey, { projects: "alpha" });
    const alpha = await exchangeCode(alphaOnly.client, alphaOnly.code, alphaOnly.verifier);
    await toolResult(await mcpTool(alpha.access_token, "memory_store", { content: "alpha fact", namespace: "alpha" }));
    const beta = await (
      await mcpTool(alpha.access_token, "memory_store", { content: "beta fact", namespace: "beta" })
    ).json<any>();
    expect(beta.result.content[0].text).toMatch(/PERMISSION_DENIED.*'beta'/);
    const projects = await toolResult(await mcpTool(alpha.access_token, "context_list_projects", {}, "?toolsets=all"));
    expect(projects.projects).toEqual(["alpha"]);
  });

  it("a token shares its key's rate limit", async () => {
    const t = await newTenant();
    const { client, code, verifier } = await authorizeWithKey(t.apiKey);
    const tokens = await exchangeCode(client, code, verifier);
    const batch = Array.from({ length: 40 }, (_, id) => ({
      jsonrpc: "2.0",
      id,
      method: "tools/call",
      params: { name: "ping", arguments: {} },
    }));
    await insideOneRateWindow();
    await jsonrpc(t.apiKey, batch); // the test limit: 40 tool calls a minute per key
    const limited = await mcpTool(tokens.access_token, "ping");
    expect(limited.status).toBe(429);
    expect(limited.headers.get("retry-after")).toBe("60");
  });
});

describe("client ID metadata documents", () => {
  afterEach(() => vi.restoreAllMocks());

  it("a client whose ID is a URL is shown with its domain and completes the flow", async () => {
    const clientId = "https://app.example/oauth/client.json";
    const document = {
      client_id: clientId,
      client_name: "Example App",
      redirect_uris: [REDIRECT_URI],
      token_endpoint_auth_method: "none",
      grant_types: ["authorization_code", "refresh_token"],
      response_types: ["code"],
    };
    const fetched = vi.spyOn(globalThis, "fetch").mockImplementation(async (input) => {
      if (String(input instanceof Request ? input.url : input) !== clientId)
        return new Response("not found", { status: 404 });
      return Response.json(document, { headers: { "cache-control": "max-age=60" } });
    });
    const t = await newTenant();
    const { challenge, verifier } = await pkce();
    const page = await openConsent(
      authorizePath({
        client_id: clientId,
        redirect_uri: REDIRECT_URI,
        code_challenge: challenge,
        code_challenge_method: "S256",
      }),
    );
    expect(page.response.status, page.html).toBe(200);
    expect(page.html).toContain("Published by <strong>app.example</strong>");
    expect(fetched).toHaveBeenCalled();
    const params = redirectParams(await postConsent(page, { apiKey: t.apiKey }));
    const tokens = await exchangeCode(
      { client_id: clientId, redirect_uris: [REDIRECT_URI] },
      params.get("code")!,
      verifier,
    );
    await toolResult(await mcpTool(tokens.access_token, "ping"));
  });
});

describe("the admin API for grants", () => {
  it("lists a tenant's grants to its admins, and revoking one ends its tokens", async () => {
    const t = await newTenant({ scopes: ["admin"] });
    const narrow = await newKey(t.tenantId, { scopes: ["write"], projects: ["alpha"] });
    const wide = await authorizeWithKey(t.apiKey, { projects: "" });
    const wideTokens = await exchangeCode(wide.client, wide.code, wide.verifier);
    const small = await authorizeWithKey(narrow.apiKey, { client: await registerClient({ client_name: "Small" }) });

    const listed = await (await admin("GET", `/tenants/${t.tenantId}/grants`)).json<any>();
    expect(listed.grants).toHaveLength(2);
    expect(listed.grants.find((g: any) => g.key_id === t.keyId)).toMatchObject({
      tenant_id: t.tenantId,
      client_id: wide.client.client_id,
      client_name: "Test Connector",
      redirect_host: "connector.example",
      scopes: ["read", "write"],
      projects: null,
      resource: `${BASE}/mcp`,
    });
    expect(JSON.stringify(listed)).not.toContain(wideTokens.access_token);

    // A tenant admin limited to a project sees only grants within its reach; another tenant sees none.
    const projectAdmin = await newKey(t.tenantId, { scopes: ["admin"], projects: ["alpha"] });
    const seen = await (
      await admin("GET", `/tenants/${t.tenantId}/grants`, undefined, projectAdmin.apiKey)
    ).json<any>();
    expect(seen.grants.map((g: any) => g.key_id)).toEqual([narrow.keyId]);
    const stranger = await newTenant({ scopes: ["admin"] });
    expect((await admin("GET", `/tenants/${t.tenantId}/grants`, undefined, stranger.apiKey)).status).toBe(403);
    const wideGrant = listed.grants.find((g: any) => g.key_id === t.keyId).grant_id;
    expect((await admin("DELETE", `/keys/${t.keyId}/grants/${wideGrant}`, undefined, projectAdmin.apiKey)).status).toBe(
      403,
    );
    expect((await admin("DELETE", `/keys/${t.keyId}/grants/${wideGrant}`, undefined, stranger.apiKey)).status).toBe(
      404,
    );

    await toolResult(await mcpTool(wideTokens.access_token, "ping"));
    const revoked = await admin("DELETE", `/keys/${t.keyId}/grants/${wideGrant}`, undefined, t.apiKey);
    expect(revoked.status).toBe(200);
    expect(await revoked.json()).toMatchObject({ grant_id: wideGrant, revoked: true });
    expect((await mcpTool(wideTokens.access_token, "ping")).status).toBe(401);
    expect((await admin("DELETE", `/keys/${t.keyId}/grants/${wideGrant}`)).status).toBe(404);
    expect(small.code).toBeTruthy();
    expect((await env.OAUTH_KV.list({ prefix: `grant:${narrow.keyId}:` })).keys).toHaveLength(1);
  });
});
