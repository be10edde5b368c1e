#!/usr/bin/env node
// The OAuth flow a connector (Claude.ai, ChatGPT) runs, step by step against a running server, printing what
// each step sends back: discovery, dynamic registration, the authorize URL with PKCE, the consent form signed
// in with an API key (as the person's browser would post it), the code, the token exchange, tools with the
// token, and a refresh.
//   npm run dev                                   # in another terminal
//   node scripts/oauth-walkthrough.mjs [base-url] [api-key]
// The key defaults to DEV_API_KEY from .dev.vars; it must have the write or admin scope.
import { createHash, randomBytes } from "node:crypto";
import { existsSync, readFileSync } from "node:fs";

const base = (process.argv[2] ?? "http://localhost:8787").replace(/\/$/, "");
const apiKey = process.argv[3] ?? devKey();
if (!apiKey) throw new Error("Pass an API key, or create .dev.vars (npm run dev does) with DEV_API_KEY");
const redirectUri = "http://127.0.0.1:33418/callback"; // a loopback callback, as a local app registers; never contacted

const show = (title, value) =>
  console.log(`\n### ${title}\n${typeof value === "string" ? value : JSON.stringify(value, null, 2)}`);

// 1. An unauthenticated request: the 401 names the protected resource metadata.
const unauthenticated = await fetch(`${base}/mcp`, {
  method: "POST",
  headers: { "content-type": "application/json" },
  body: "{}",
});
show(
  `POST /mcp without credentials -> ${unauthenticated.status}`,
  `WWW-Authenticate: ${unauthenticated.headers.get("www-authenticate")}`,
);
const resourceMetadataUrl = unauthenticated.headers.get("www-authenticate").match(/resource_metadata="([^"]+)"/)[1];

// 2. Discovery.
const resource = await json(await fetch(resourceMetadataUrl));
show(`GET ${resourceMetadataUrl}`, resource);
const issuer = resource.authorization_servers[0];
const server = await json(await fetch(`${issuer}/.well-known/oauth-authorization-server`));
show(`GET ${issuer}/.well-known/oauth-authorization-server`, server);

// 3. Dynamic client registration.
const client = await json(
  await fetch(server.registration_endpoint, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({
      client_name: "OAuth walkthrough",
      redirect_uris: [redirectUri],
      token_endpoint_auth_method: "none",
      grant_types: ["authorization_code", "refresh_token"],
      response_types: ["code"],
    }),
  }),
);
show(`POST ${server.registration_endpoint}`, client);

// 4. The authorize URL with PKCE; the consent page; the form posted back with the key.
const verifier = randomBytes(32).toString("base64url");
const challenge = createHash("sha256").update(verifier).digest("base64url");
const state = randomBytes(8).toString("hex");
const authorizeUrl = `${server.authorization_endpoint}?${new URLSearchParams({ response_type: "code", client_id: client.client_id, redirect_uri: redirectUri, code_challenge: challenge, code_challenge_method: "S256", scope: "read write", state, resource: resource.resource })}`;
const page = await fetch(authorizeUrl, { redirect: "manual" });
const html = await page.text();
if (page.status !== 200) throw new Error(`authorize answered ${page.status}: ${html}`);
const handle = html.match(/name="handle" value="([^"]+)"/)[1];
const cookie = page.headers
  .getSetCookie()
  .map((c) => c.split(";")[0])
  .join("; ");
show(`GET ${authorizeUrl}`, `${page.status} consent page "${html.match(/<title>(.*?)<\/title>/)[1]}"`);
const form = new URLSearchParams({ handle, decision: "approve", api_key: apiKey, projects: "" });
form.append("scope", "read");
form.append("scope", "write");
const approved = await fetch(server.authorization_endpoint, {
  method: "POST",
  redirect: "manual",
  headers: { "content-type": "application/x-www-form-urlencoded", cookie, origin: new URL(base).origin },
  body: form,
});
const location = approved.headers.get("location");
if (approved.status !== 302) throw new Error(`consent answered ${approved.status}: ${await approved.text()}`);
show(
  `POST ${server.authorization_endpoint} (approve, signed in with the key) -> ${approved.status}`,
  `Location: ${location}`,
);
const callback = new URL(location).searchParams;
if (callback.get("state") !== state || callback.get("iss") !== server.issuer)
  throw new Error("state or iss does not match");

// 5. The token exchange.
const tokenBody = {
  grant_type: "authorization_code",
  code: callback.get("code"),
  code_verifier: verifier,
  client_id: client.client_id,
  redirect_uri: redirectUri,
  resource: resource.resource,
};
const tokens = await json(
  await fetch(server.token_endpoint, {
    method: "POST",
    headers: { "content-type": "application/x-www-form-urlencoded" },
    body: new URLSearchParams(tokenBody),
  }),
);
show(
  `POST ${server.token_endpoint} ${new URLSearchParams({ ...tokenBody, code: "<code>", code_verifier: "<verifier>" })}`,
  tokens,
);

// 6. Tools with the access token.
const mcp = (token, body) =>
  fetch(`${base}/mcp`, {
    method: "POST",
    headers: { authorization: `Bearer ${token}`, "content-type": "application/json", accept: "application/json" },
    body: JSON.stringify(body),
  }).then(json);
const listed = await mcp(tokens.access_token, { jsonrpc: "2.0", id: 1, method: "tools/list" });
show(
  "POST /mcp tools/list (Bearer <access token>)",
  `${listed.result.tools.length} tools: ${listed.result.tools.map((t) => t.name).join(", ")}`,
);
const stored = await mcp(tokens.access_token, {
  jsonrpc: "2.0",
  id: 2,
  method: "tools/call",
  params: { name: "memory_store", arguments: { content: "Stored through an OAuth access token" } },
});
show("POST /mcp tools/call memory_store", stored.result.structuredContent);

// 7. A refresh: a new access token and a new refresh token (rotation).
const refreshed = await json(
  await fetch(server.token_endpoint, {
    method: "POST",
    headers: { "content-type": "application/x-www-form-urlencoded" },
    body: new URLSearchParams({
      grant_type: "refresh_token",
      refresh_token: tokens.refresh_token,
      client_id: client.client_id,
    }),
  }),
);
show(`POST ${server.token_endpoint} grant_type=refresh_token`, refreshed);

function devKey() {
  if (!existsSync(".dev.vars")) return undefined;
  return readFileSync(".dev.vars", "utf8").match(/^\s*DEV_API_KEY\s*=\s*"?([^"\s]+)"?/m)?.[1];
}

async function json(response) {
  const text = await response.text();
  try {
    return JSON.parse(text);
  } catch {
    throw new Error(`${response.url} answered ${response.status}: ${text}`);
  }
}
