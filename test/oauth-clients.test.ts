import { exports } from "cloudflare:workers";
import {
  Client as ClientV2,
  type OAuthClientProvider as ProviderV2,
  StreamableHTTPClientTransport as TransportV2,
} from "@modelcontextprotocol/client";
import { auth, type OAuthClientProvider } from "@modelcontextprotocol/sdk/client/auth.js";
import { Client as ClientV1 } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport as TransportV1 } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import type { OAuthClientInformationMixed, OAuthTokens } from "@modelcontextprotocol/sdk/shared/auth.js";
import { describe, expect, it } from "vitest";
import { BASE, newTenant } from "./helpers";
import { openConsent, postConsent, redirectParams } from "./oauth-flow";

// The MCP SDKs' own OAuth support against the real app: from the first 401 through discovery,
// dynamic registration, PKCE, the consent page (played by the test as the person's browser), the code
// exchange and a refresh, to tool calls with the token.

const serverUrl = new URL(`${BASE}/mcp`);
const CALLBACK = "http://127.0.0.1:33418/callback";
const appFetch = (url: string | URL | Request, init?: RequestInit) => exports.default.fetch(new Request(url, init));

/** What a client application keeps: its registration, its tokens, its PKCE verifier, and where it sent the person. */
class MemoryProvider implements OAuthClientProvider {
  info?: OAuthClientInformationMixed;
  saved?: OAuthTokens;
  verifier = "";
  authorizationUrl?: URL;
  readonly redirectUrl = CALLBACK;
  readonly clientMetadata = {
    client_name: "SDK test client",
    redirect_uris: [CALLBACK],
    grant_types: ["authorization_code", "refresh_token"],
    response_types: ["code"],
    token_endpoint_auth_method: "none",
  };
  clientInformation() {
    return this.info;
  }
  saveClientInformation(info: OAuthClientInformationMixed) {
    this.info = info;
  }
  tokens() {
    return this.saved;
  }
  saveTokens(tokens: OAuthTokens) {
    this.saved = tokens;
  }
  redirectToAuthorization(url: URL) {
    this.authorizationUrl = url;
  }
  saveCodeVerifier(verifier: string) {
    this.verifier = verifier;
  }
  codeVerifier() {
    return this.verifier;
  }
}

/** The person: opens the URL the client sent them to, pastes their key, approves; returns the callback's parameters. */
async function consentInBrowser(authorizationUrl: URL, apiKey: string): Promise<URLSearchParams> {
  expect(authorizationUrl.origin).toBe(BASE);
  expect(authorizationUrl.searchParams.get("code_challenge_method")).toBe("S256");
  const page = await openConsent(authorizationUrl.pathname + authorizationUrl.search);
  expect(page.html).toContain("SDK test client");
  const params = redirectParams(await postConsent(page, { apiKey }));
  expect(params.get("iss")).toBe(BASE);
  return params;
}

describe("OAuth through the MCP SDKs' own client support", () => {
  it("SDK v1: auth() discovers, registers and redirects; the code is exchanged; the client calls tools; auth() refreshes", async () => {
    const t = await newTenant();
    const provider = new MemoryProvider();

    // A client without credentials meets the 401 and starts OAuth from it.
    const first = new ClientV1({ name: "v1-oauth", version: "1.0.0" });
    await expect(
      first.connect(new TransportV1(serverUrl, { authProvider: provider, fetch: appFetch })),
    ).rejects.toThrow(/Unauthorized/);
    expect(provider.info?.client_id).toBeTruthy(); // dynamic registration
    const params = await consentInBrowser(provider.authorizationUrl!, t.apiKey);
    expect(await auth(provider, { serverUrl, authorizationCode: params.get("code")!, fetchFn: appFetch })).toBe(
      "AUTHORIZED",
    );
    expect(provider.saved).toMatchObject({
      token_type: expect.stringMatching(/bearer/i),
      expires_in: 3600,
      scope: "read write",
    });

    const client = new ClientV1({ name: "v1-oauth", version: "1.0.0" });
    await client.connect(new TransportV1(serverUrl, { authProvider: provider, fetch: appFetch }));
    expect((await client.listTools()).tools.map((x) => x.name)).toContain("memory_store");
    const stored = await client.callTool({
      name: "memory_store",
      arguments: { content: "stored through the SDK's OAuth" },
    });
    expect(stored.isError).toBeFalsy();
    await client.close();

    // With a refresh token in hand, auth() refreshes instead of sending the person back.
    const before = provider.saved!;
    provider.authorizationUrl = undefined;
    expect(await auth(provider, { serverUrl, fetchFn: appFetch })).toBe("AUTHORIZED");
    expect(provider.authorizationUrl).toBeUndefined();
    expect(provider.saved!.refresh_token).not.toBe(before.refresh_token);
    const again = new ClientV1({ name: "v1-oauth", version: "1.0.0" });
    await again.connect(new TransportV1(serverUrl, { authProvider: provider, fetch: appFetch }));
    const search = await again.callTool({ name: "search", arguments: { query: "SDK OAuth" } });
    expect(JSON.stringify(search.structuredContent)).toContain("stored through the SDK");
    await again.close();
  });

  it("SDK v2: the transport's finishAuth checks iss (RFC 9207) and redeems the code; the client calls tools", async () => {
    const t = await newTenant();
    const provider = new MemoryProvider() as unknown as ProviderV2 & MemoryProvider;
    const first = new ClientV2({ name: "v2-oauth", version: "1.0.0" });
    const transport = new TransportV2(serverUrl, { authProvider: provider, fetch: appFetch });
    await expect(first.connect(transport)).rejects.toThrow(/Unauthorized|authoriz/i);
    const params = await consentInBrowser(provider.authorizationUrl!, t.apiKey);
    await transport.finishAuth(params);
    expect(provider.saved?.access_token).toBeTruthy();

    const client = new ClientV2({ name: "v2-oauth", version: "1.0.0" });
    await client.connect(new TransportV2(serverUrl, { authProvider: provider, fetch: appFetch }));
    expect((await client.listTools()).tools.map((x) => x.name)).toContain("search");
    const ping = await client.callTool({ name: "ping", arguments: {} });
    expect(ping.content).toEqual([{ type: "text", text: "pong" }]);
    await client.close();
  });
});
