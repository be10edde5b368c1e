// Shared by the browser tests: Debian's Chromium driven by playwright-core, a tenant with keys, and
// screenshots saved under test/browser/artifacts/ (not committed) for a person to look at.
import { mkdirSync } from "node:fs";
import { chromium } from "playwright-core";

export const BASE_URL = process.env.BASE_URL ?? "http://127.0.0.1:8797";
const ADMIN_TOKEN = process.env.ADMIN_TOKEN ?? "bench-admin-token";
export const ARTIFACTS = "test/browser/artifacts";

/** Headless Chromium with the flags this closed network needs (no background connections). */
export function launchBrowser() {
  return chromium.launch({
    executablePath: process.env.CHROMIUM_PATH ?? "/usr/bin/chromium",
    args: [
      "--no-sandbox",
      "--disable-gpu",
      "--disable-quic",
      "--no-first-run",
      "--disable-background-networking",
      "--disable-component-update",
      "--disable-sync",
    ],
  });
}

/**
 * A new page that records in `errors` uncaught page errors, console errors and failed responses (all
 * but the favicon the browser asks for on its own).
 */
export async function openPage(browser) {
  const context = await browser.newContext({ viewport: { width: 1280, height: 860 } });
  const page = await context.newPage();
  const errors = [];
  page.on("pageerror", (error) => errors.push(`pageerror: ${error.message}`));
  page.on("console", (message) => {
    // A failed load also logs "Failed to load resource"; the response handler reports it with its URL.
    if (message.type() === "error" && !message.text().startsWith("Failed to load resource"))
      errors.push(`console: ${message.text()}`);
  });
  page.on("response", (response) => {
    if (response.status() >= 400 && !new URL(response.url()).pathname.endsWith("/favicon.ico"))
      errors.push(`http ${response.status()}: ${response.url()}`);
  });
  return { page, errors };
}

/**
 * A new page signed in to the dashboard with `key`; `dialogs` gathers the messages of the confirm dialogs it
 * dismisses (a test that accepts one listens itself).
 */
export async function signIn(browser, key) {
  const { page, errors } = await openPage(browser);
  const dialogs = [];
  page.on("dialog", (d) => (dialogs.push(d.message()), d.dismiss()));
  await page.goto(`${BASE_URL}/dashboard`);
  await page.getByLabel("API key").fill(key);
  await page.getByRole("button", { name: "Sign in" }).click();
  await page.getByRole("navigation", { name: "Dashboard sections" }).waitFor();
  return { page, errors, dialogs };
}

export async function screenshot(page, name) {
  mkdirSync(ARTIFACTS, { recursive: true });
  await page.screenshot({ path: `${ARTIFACTS}/${name}.png`, fullPage: true });
}

/** The operator admin API. */
export async function admin(method, path, body) {
  const response = await fetch(`${BASE_URL}/admin${path}`, {
    method,
    headers: { authorization: `Bearer ${ADMIN_TOKEN}`, "content-type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  if (!response.ok) throw new Error(`admin ${method} ${path}: ${response.status} ${await response.text()}`);
  return response.json();
}

/** A new tenant and a key with the given scopes (and projects, when given). */
export async function tenantWithKey(name, scopes, projects) {
  const tenant = await admin("POST", "/tenants", { name });
  const key = await admin("POST", `/tenants/${tenant.tenant_id}/keys`, {
    name: `${name} key`,
    scopes,
    ...(projects ? { projects } : {}),
  });
  return { tenantId: tenant.tenant_id, key: key.api_key };
}

/** One tools/call through /jsonrpc; throws on a JSON-RPC error. */
export async function callTool(key, name, args) {
  const response = await fetch(`${BASE_URL}/jsonrpc`, {
    method: "POST",
    headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
    body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/call", params: { name, arguments: args } }),
  });
  const body = await response.json();
  if (body.error) throw new Error(`${name}: ${JSON.stringify(body.error)}`);
  return body.result;
}
