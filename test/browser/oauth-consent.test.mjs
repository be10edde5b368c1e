// The OAuth consent page in a real Chromium: a connector registers with a hostile name, the person opens the
// authorize URL, sees the name as plain text, pastes a key, narrows the scopes and approves (or denies); the
// browser is sent to the connector's callback with a code and iss. The callback host does not exist on this
// closed network: the test reads the URL the browser asks for, which also proves the page's form-action
// policy lets the redirect through (a blocked one is never requested).
import assert from "node:assert/strict";
import { createHash, randomBytes } from "node:crypto";
import { after, before, test } from "node:test";
import { BASE_URL, launchBrowser, openPage, screenshot, tenantWithKey } from "./browser.mjs";

const CALLBACK = "https://connector.example/oauth/callback";
const HOSTILE_NAME = "<img src=x onerror=alert(1)> Evil Connector";

let browser;
let tenant;
let client;
before(async () => {
  browser = await launchBrowser();
  tenant = await tenantWithKey("OAuth consent", ["read", "write"]);
  const response = await fetch(`${BASE_URL}/oauth/register`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({
      client_name: HOSTILE_NAME,
      redirect_uris: [CALLBACK],
      token_endpoint_auth_method: "none",
      grant_types: ["authorization_code", "refresh_token"],
      response_types: ["code"],
    }),
  });
  assert.equal(response.status, 201);
  client = await response.json();
});
after(() => browser?.close());

function pkce() {
  const verifier = randomBytes(32).toString("base64url");
  return { verifier, challenge: createHash("sha256").update(verifier).digest("base64url") };
}

function authorizeUrl(challenge, state) {
  const query = new URLSearchParams({
    response_type: "code",
    client_id: client.client_id,
    redirect_uri: CALLBACK,
    code_challenge: challenge,
    code_challenge_method: "S256",
    scope: "read write",
    state,
  });
  return `${BASE_URL}/oauth/authorize?${query}`;
}

/** A page that records any dialog (an alert would mean the client name ran as markup). */
async function consentPage() {
  const { page, errors } = await openPage(browser);
  const dialogs = [];
  page.on("dialog", async (dialog) => {
    dialogs.push(dialog.message());
    await dialog.dismiss();
  });
  return { page, errors, dialogs };
}

/** Clicks a button of the consent form and returns the connector callback URL the browser is sent to. */
async function submitToCallback(page, button) {
  const [request] = await Promise.all([page.waitForRequest((r) => r.url().startsWith(CALLBACK)), page.click(button)]);
  return new URL(request.url());
}

test("the consent page shows a hostile client name as text; approving with narrowed scopes redirects with code and iss", async () => {
  const { page, errors, dialogs } = await consentPage();
  const { verifier, challenge } = pkce();
  const response = await page.goto(authorizeUrl(challenge, "state-approve"));
  assert.equal(response.status(), 200);
  assert.equal(await page.textContent("#client-name"), HOSTILE_NAME);
  assert.equal(await page.locator("img").count(), 0);
  assert.match(await page.textContent("#redirect-host"), /connector\.example/);
  assert.match(await page.textContent("#requested-scopes"), /read\s+write/);
  assert.equal(await page.isChecked("input[name=scope][value=read]"), true);
  assert.equal(await page.isChecked("input[name=scope][value=write]"), true);
  await screenshot(page, "oauth-consent");

  await page.fill("#api_key", tenant.key);
  await page.uncheck("input[name=scope][value=write]");
  await page.fill("#projects", "notes");
  await screenshot(page, "oauth-consent-filled");
  const callback = await submitToCallback(page, "button[value=approve]");
  assert.equal(callback.searchParams.get("state"), "state-approve");
  assert.equal(callback.searchParams.get("iss"), BASE_URL);
  const code = callback.searchParams.get("code");
  assert.ok(code);
  assert.deepEqual(dialogs, []);
  assert.deepEqual(errors, []);

  // The connector redeems the code: the token carries only what the person left ticked.
  const tokenResponse = await fetch(`${BASE_URL}/oauth/token`, {
    method: "POST",
    headers: { "content-type": "application/x-www-form-urlencoded" },
    body: new URLSearchParams({
      grant_type: "authorization_code",
      code,
      code_verifier: verifier,
      client_id: client.client_id,
      redirect_uri: CALLBACK,
    }),
  });
  assert.equal(tokenResponse.status, 200);
  const tokens = await tokenResponse.json();
  assert.equal(tokens.scope, "read");
  const store = await fetch(`${BASE_URL}/mcp`, {
    method: "POST",
    headers: {
      authorization: `Bearer ${tokens.access_token}`,
      "content-type": "application/json",
      accept: "application/json",
    },
    body: JSON.stringify({
      jsonrpc: "2.0",
      id: 1,
      method: "tools/call",
      params: { name: "memory_store", arguments: { content: "x", namespace: "notes" } },
    }),
  });
  const stored = await store.json();
  assert.equal(stored.result.isError, true);
  assert.match(stored.result.content[0].text, /'write' scope/);
});

test("deny sends the browser back to the connector with error=access_denied and iss", async () => {
  const { page, errors } = await consentPage();
  await page.goto(authorizeUrl(pkce().challenge, "state-deny"));
  await screenshot(page, "oauth-consent-before-deny");
  const callback = await submitToCallback(page, "button[value=deny]");
  assert.equal(callback.searchParams.get("error"), "access_denied");
  assert.equal(callback.searchParams.get("state"), "state-deny");
  assert.equal(callback.searchParams.get("iss"), BASE_URL);
  assert.equal(callback.searchParams.get("code"), null);
  assert.deepEqual(errors, []);
});

test("a wrong key shows the page again with the error and without the key", async () => {
  const { page, errors } = await consentPage();
  await page.goto(authorizeUrl(pkce().challenge, "state-wrong"));
  await page.fill("#api_key", "ce_not_a_real_key");
  await Promise.all([page.waitForLoadState("load"), page.click("button[value=approve]")]);
  assert.match(await page.textContent("[role=alert]"), /not valid or has been revoked/);
  assert.equal(await page.inputValue("#api_key"), "");
  assert.equal(await page.textContent("#client-name"), HOSTILE_NAME);
  await screenshot(page, "oauth-consent-wrong-key");
  // The refused form answers 400; nothing else may fail.
  assert.deepEqual(
    errors.filter((e) => !/^http 400: .*\/oauth\/authorize$/.test(e)),
    [],
  );
});
