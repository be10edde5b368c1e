import { expect } from "vitest";
import { mcpPost, request } from "./helpers";

// The OAuth flow as a connector and a person's browser drive it, against the worker's real routes.

export const REDIRECT_URI = "https://connector.example/oauth/callback";

export interface Client {
  client_id: string;
  client_secret?: string;
  client_name?: string;
  redirect_uris: string[];
}

/** Dynamic client registration (RFC 7591): a public client, as Claude.ai and ChatGPT register. */
export async function registerClient(metadata: Record<string, unknown> = {}): Promise<Client> {
  const response = await request("/oauth/register", {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({
      client_name: "Test Connector",
      redirect_uris: [REDIRECT_URI],
      token_endpoint_auth_method: "none",
      grant_types: ["authorization_code", "refresh_token"],
      response_types: ["code"],
      ...metadata,
    }),
  });
  expect(response.status, await response.clone().text()).toBe(201);
  return response.json<Client>();
}

export async function pkce(): Promise<{ verifier: string; challenge: string }> {
  const verifier = base64Url(crypto.getRandomValues(new Uint8Array(32)));
  const digest = await crypto.subtle.digest("SHA-256", new TextEncoder().encode(verifier));
  return { verifier, challenge: base64Url(new Uint8Array(digest)) };
}

function base64Url(bytes: Uint8Array): string {
  return btoa(String.fromCharCode(...bytes))
    .replace(/\+/g, "-")
    .replace(/\//g, "_")
    .replace(/=+$/, "");
}

/** The authorize URL a connector opens in the person's browser; `undefined` leaves a parameter out. */
export function authorizePath(params: Record<string, string | undefined>): string {
  const query = new URLSearchParams();
  for (const [name, value] of Object.entries({ response_type: "code", state: "st-123", ...params }))
    if (value !== undefined) query.set(name, value);
  return `/oauth/authorize?${query}`;
}

export interface ConsentPage {
  response: Response;
  html: string;
  handle: string;
  /** The browser's binding cookie for this page, as the next request sends it. */
  cookie: string;
}

/** GET the consent page: the form's handle and the cookie that binds it to this "browser". */
export async function openConsent(path: string, cookie = ""): Promise<ConsentPage> {
  const response = await request(path, { headers: cookie ? { cookie } : {} });
  return readConsent(response);
}

export async function readConsent(response: Response, previousCookie = ""): Promise<ConsentPage> {
  const html = await response.text();
  const handle = html.match(/name="handle" value="([^"]+)"/)?.[1] ?? "";
  const cookies = response.headers
    .getSetCookie()
    .filter((c) => !/Max-Age=0/.test(c))
    .map((c) => c.split(";")[0]!);
  return { response, html, handle, cookie: [previousCookie, ...cookies].filter(Boolean).join("; ") };
}

/** POST the consent form as the browser does (same origin, its cookie). */
export function postConsent(
  page: Pick<ConsentPage, "handle" | "cookie">,
  fields: { decision?: string; apiKey?: string; scopes?: readonly string[]; projects?: string } = {},
): Promise<Response> {
  const form = new URLSearchParams({
    handle: page.handle,
    decision: fields.decision ?? "approve",
    api_key: fields.apiKey ?? "",
    projects: fields.projects ?? "",
  });
  for (const scope of fields.scopes ?? ["read", "write"]) form.append("scope", scope);
  return request("/oauth/authorize", {
    method: "POST",
    headers: { "content-type": "application/x-www-form-urlencoded", cookie: page.cookie, origin: "http://localhost" },
    body: form,
    redirect: "manual",
  });
}

/** The parameters of the redirect back to the connector. */
export function redirectParams(response: Response): URLSearchParams {
  expect(response.status).toBe(302);
  const location = new URL(response.headers.get("location")!);
  return location.searchParams;
}

/** Register (or reuse) a client, authorize with PKCE, sign in with the key, return the code and verifier. */
export async function authorizeWithKey(
  apiKey: string,
  options: { client?: Client; scopes?: string[]; projects?: string; scope?: string } = {},
): Promise<{ client: Client; code: string; verifier: string; params: URLSearchParams }> {
  const client = options.client ?? (await registerClient());
  const { verifier, challenge } = await pkce();
  const page = await openConsent(
    authorizePath({
      client_id: client.client_id,
      redirect_uri: client.redirect_uris[0],
      code_challenge: challenge,
      code_challenge_method: "S256",
      scope: options.scope ?? "read write",
    }),
  );
  expect(page.response.status, page.html).toBe(200);
  const params = redirectParams(
    await postConsent(page, { apiKey, scopes: options.scopes, projects: options.projects }),
  );
  expect(params.get("error"), params.get("error_description") ?? "").toBeNull();
  return { client, code: params.get("code")!, verifier, params };
}

export function tokenRequest(fields: Record<string, string | undefined>): Promise<Response> {
  const body = new URLSearchParams();
  for (const [name, value] of Object.entries(fields)) if (value !== undefined) body.set(name, value);
  return request("/oauth/token", {
    method: "POST",
    headers: { "content-type": "application/x-www-form-urlencoded" },
    body,
  });
}

export interface Tokens {
  access_token: string;
  refresh_token: string;
  token_type: string;
  expires_in: number;
  scope: string;
  resource: string;
}

export async function exchangeCode(client: Client, code: string, verifier: string): Promise<Tokens> {
  const response = await tokenRequest({
    grant_type: "authorization_code",
    code,
    code_verifier: verifier,
    client_id: client.client_id,
    redirect_uri: client.redirect_uris[0],
  });
  expect(response.status, await response.clone().text()).toBe(200);
  return response.json<Tokens>();
}

export async function refresh(client: Client, refreshToken: string): Promise<Response> {
  return tokenRequest({ grant_type: "refresh_token", refresh_token: refreshToken, client_id: client.client_id });
}

/** A tools/call over /mcp with a bearer credential (an access token or a key); the JSON-RPC response. */
export async function mcpTool(
  credential: string,
  name: string,
  args: Record<string, unknown> = {},
  query = "",
): Promise<Response> {
  return mcpPost(
    credential,
    { jsonrpc: "2.0", id: 1, method: "tools/call", params: { name, arguments: args } },
    { query, accept: "application/json" },
  );
}

/** A successful tool result's structured content; fails the test on a tool error. */
export async function toolResult(response: Response): Promise<any> {
  expect(response.status).toBe(200);
  const body = await response.json<any>();
  expect(body.result?.isError, JSON.stringify(body)).toBeFalsy();
  return body.result.structuredContent;
}
