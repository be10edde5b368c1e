// The dashboard in Chromium against a fresh `wrangler dev`: sign in with a key, search, edit, delete,
// the graph and usage views, stored markup staying text, and what a read-only key is not offered.
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import {
  admin,
  BASE_URL,
  callTool,
  launchBrowser,
  openPage,
  screenshot,
  signIn as signInAs,
  tenantWithKey,
} from "./browser.mjs";

const XSS = `<img src=x onerror="window.__pwned = 1; alert(1)"><script>window.__pwned = 2</script> stays text`;

let browser;
let tenant;
let readKey;
const ids = {};

before(async () => {
  browser = await launchBrowser();
  tenant = await tenantWithKey("Dashboard Co", ["admin"]);
  readKey = (await admin("POST", `/tenants/${tenant.tenantId}/keys`, { name: "viewer", scopes: ["read"] })).api_key;
  const stored = await callTool(tenant.key, "memory_batch_store", {
    namespace: "acme-web",
    memories: [
      {
        content: "The staging database is Postgres 16 on port 6543; migrations run nightly.",
        tags: ["infra"],
        importance: 0.7,
        type: "config",
      },
      {
        content: "Customer Zebulon Ltd prefers invoices in Swiss francs and quarterly billing.",
        tags: ["billing"],
        type: "decision",
      },
      { content: "A throwaway note about the retired build server in Frankfurt.", tags: ["old"] },
      { content: XSS, tags: ["security"] },
    ],
  });
  [ids.postgres, ids.zebulon, ids.throwaway, ids.xss] = stored.ids;
  await callTool(tenant.key, "memory_store", {
    content: "Deploys go out on Tuesdays after the standup.",
    namespace: "acme-api",
    tags: ["process"],
  });
  await callTool(tenant.key, "link_resources", {
    source_id: ids.zebulon,
    target_id: ids.postgres,
    relationship_type: "references",
  });
  await callTool(tenant.key, "link_resources", {
    source_id: ids.throwaway,
    target_id: ids.postgres,
    relationship_type: "supersedes",
  });
  await callTool(tenant.key, "link_resources", {
    source_id: ids.xss,
    target_id: ids.postgres,
    relationship_type: "related_to",
  });
  for (const [role, content] of [
    ["user", "Which currency does Zebulon pay in?"],
    ["assistant", "Zebulon Ltd pays in Swiss francs, billed quarterly."],
  ]) {
    await callTool(tenant.key, "log_chat", { conversation_id: "billing-chat", role, content, project_id: "acme-web" });
  }
});

after(() => browser?.close());

const signIn = (key) => signInAs(browser, key);

test("signing in keeps the key in this tab's session storage only; a wrong key is refused", async () => {
  const { page, errors } = await openPage(browser);
  await page.goto(`${BASE_URL}/dashboard`);
  await page.getByLabel("API key").fill("ce_not_a_real_key");
  await page.getByRole("button", { name: "Sign in" }).click();
  await page
    .getByRole("alert")
    .filter({ hasText: /invalid or revoked/i })
    .waitFor();
  await screenshot(page, "dashboard-01-sign-in-refused");
  errors.splice(0); // the refused key's 401 is the point of this step

  await page.getByLabel("API key").fill(tenant.key);
  await page.getByRole("button", { name: "Sign in" }).click();
  await page.getByRole("navigation", { name: "Dashboard sections" }).waitFor();
  assert.ok(!page.url().includes(tenant.key), "the key is not in the URL");
  assert.equal(await page.evaluate(() => document.cookie), "");
  assert.equal(await page.evaluate(() => Object.values(sessionStorage).length), 1);
  assert.match(await page.locator(".who").textContent(), /admin/);
  assert.deepEqual(errors, []);
  await page.context().close();
});

test("a stored memory is found by search, its tags edited, and the edit holds through the API", async () => {
  const { page, errors } = await signIn(tenant.key);
  await page.getByRole("link", { name: /Postgres 16/ }).waitFor(); // the newest-first listing
  await page.getByLabel("Search", { exact: true }).fill("Zebulon invoices francs");
  await page.getByRole("button", { name: "Search" }).click();
  const hit = page.getByRole("list", { name: "Memories" }).getByRole("link", { name: /Zebulon Ltd prefers invoices/ });
  await hit.waitFor();
  await screenshot(page, "dashboard-02-search");

  await hit.click();
  await page.getByTestId("memory-content").filter({ hasText: "Swiss francs" }).waitFor();
  await page.getByLabel("Tags (comma-separated)").fill("billing, finance, vip customer");
  await page.getByLabel("Importance (0–1)").fill("0.9");
  await page.getByRole("button", { name: "Save changes" }).click();
  await page.getByRole("status").filter({ hasText: "Saved." }).waitFor();
  await page.getByRole("list", { name: "Tags" }).first().getByText("vip customer").waitFor();
  await screenshot(page, "dashboard-03-memory-edited");

  const stored = await callTool(tenant.key, "memory_get", { id: ids.zebulon });
  assert.deepEqual(stored.tags, ["billing", "finance", "vip customer"]);
  assert.equal(stored.importance, 0.9);
  assert.equal(stored.links.length, 1, "the link to the Postgres note is listed");
  // The new tag is indexed: the list filter and keyword search both find it.
  const byTag = await callTool(tenant.key, "memory_list", { tags: ["finance"] });
  assert.deepEqual(
    byTag.memories.map((m) => m.id),
    [ids.zebulon],
  );
  assert.deepEqual(errors, []);
  await page.context().close();
});

test("a memory deleted after confirming is gone through the API", async () => {
  const { page, errors } = await signIn(tenant.key);
  await page.goto(`${BASE_URL}/dashboard#/memory/${ids.throwaway}`);
  await page.getByTestId("memory-content").filter({ hasText: "retired build server" }).waitFor();
  await page.getByRole("button", { name: "Delete memory" }).click();
  const dialog = page.getByRole("dialog", { name: "Delete this memory?" });
  await dialog.waitFor();
  await screenshot(page, "dashboard-04-delete-confirm");
  await dialog.getByRole("button", { name: "Cancel" }).click();
  assert.equal((await callTool(tenant.key, "memory_get", { id: ids.throwaway })).id, ids.throwaway, "cancel keeps it");

  await page.getByRole("button", { name: "Delete memory" }).click();
  await dialog.getByRole("button", { name: "Delete for good" }).click();
  await page.waitForURL(/#\/memories$/);
  await page.getByRole("link", { name: /Postgres 16/ }).waitFor();
  assert.equal(await page.getByText("retired build server").count(), 0);
  await assert.rejects(callTool(tenant.key, "memory_get", { id: ids.throwaway }), /NOT_FOUND/);
  assert.deepEqual(errors, []);
  await page.context().close();
});

test("stored markup stays inert text", async () => {
  const { page, errors, dialogs } = await signIn(tenant.key);
  await page.getByRole("link", { name: /stays text/ }).waitFor(); // in the listing, as text
  await page.goto(`${BASE_URL}/dashboard#/memory/${ids.xss}`);
  const content = page.getByTestId("memory-content");
  await content.filter({ hasText: "stays text" }).waitFor();
  assert.equal(await content.textContent(), XSS);
  assert.equal(await page.locator("main img, main script").count(), 0);
  assert.equal(await page.evaluate(() => window.__pwned), undefined);
  assert.deepEqual(dialogs, []);
  await screenshot(page, "dashboard-05-xss-inert");
  assert.deepEqual(errors, []);
  await page.context().close();
});

test("the graph, usage, working-set and conversation views draw without page errors", async () => {
  const { page, errors } = await signIn(tenant.key);
  await page.getByRole("link", { name: "Graph", exact: true }).click();
  const canvas = page.locator("canvas.graph");
  await canvas.waitFor();
  await page.waitForFunction(
    () => JSON.parse(document.querySelector("canvas.graph")?.dataset.stats ?? "{}").settled === true,
  );
  const stats = JSON.parse(await canvas.getAttribute("data-stats"));
  // Zebulon -> Postgres (references), markup note -> Postgres (related_to); the deleted note's link went with it.
  assert.equal(stats.nodes, 3);
  assert.equal(stats.edges, 2);
  await page.getByRole("checkbox", { name: "references" }).waitFor();
  assert.equal(await page.getByRole("checkbox", { name: "supersedes" }).count(), 0);
  const box = await canvas.boundingBox();
  assert.ok(box.width > 300 && box.height > 300);
  // Opening a node: N selects the most connected (the Postgres note), Enter opens it beside the graph.
  await canvas.focus();
  await page.keyboard.press("n");
  await page.keyboard.press("Enter");
  await page.getByRole("complementary", { name: "Selected node" }).getByText("Postgres 16 on port 6543").waitFor();
  await screenshot(page, "dashboard-06-graph");

  await page.getByRole("link", { name: "Usage", exact: true }).click();
  await page.getByRole("img", { name: /Tool calls per tool/ }).waitFor();
  assert.ok((await page.locator("main svg").count()) >= 3);
  assert.ok((await page.getByRole("cell", { name: "memory_batch_store" }).count()) >= 1);
  // What Cloudflare bills: the Free plan's allowances drawn, and the tools' units in the table (the jobs' too, once logged).
  const billed = page.getByRole("region", { name: "What Cloudflare bills" });
  await billed.getByRole("img", { name: /Share of the Free plan's daily allowance/ }).waitFor();
  assert.equal(await billed.getByRole("cell", { name: "memory_batch_store" }).count(), 1);
  // CPU time comes from the Worker's tail consumer, which the local server leaves out: said, not shown as 0.
  assert.equal(await billed.getByRole("columnheader", { name: "CPU ms" }).count(), 1);
  await billed.getByText(/Worker CPU time: none recorded in this period/).waitFor();
  await screenshot(page, "dashboard-07-usage");

  await page.getByRole("link", { name: "Working set", exact: true }).click();
  await page.getByRole("img", { name: /Tokens stored per project/ }).waitFor();
  await page.getByRole("heading", { name: /GC candidates/ }).waitFor();
  await screenshot(page, "dashboard-08-working-set");

  await page.getByRole("link", { name: "Conversations", exact: true }).click();
  await page.getByRole("link", { name: "billing-chat" }).click();
  await page.getByText("Zebulon Ltd pays in Swiss francs, billed quarterly.").waitFor();
  await screenshot(page, "dashboard-09-conversation");
  assert.deepEqual(errors, []);
  await page.context().close();
});

test("an admin key creates a key shown once, lists and revokes it", async () => {
  const { page, errors } = await signIn(tenant.key);
  await page.getByRole("link", { name: "Keys" }).click();
  await page.getByLabel("Name").fill("ci agent");
  await page.getByRole("radio", { name: "write" }).check();
  await page.getByLabel(/^Projects/).fill("acme-web");
  await page.getByRole("button", { name: "Create key" }).click();
  const secret = await page.getByLabel("New API key").inputValue();
  assert.match(secret, /^ce_/);
  assert.equal((await callTool(secret, "whoami", {})).projects[0], "acme-web");
  await page.getByRole("cell", { name: "ci agent", exact: true }).waitFor();
  await screenshot(page, "dashboard-10-keys");
  await page.getByRole("button", { name: "Done, hide it" }).click();
  assert.equal(await page.getByLabel("New API key").count(), 0, "the secret is not shown again");

  await page.getByRole("button", { name: /Revoke key ci agent/ }).click();
  await page.getByRole("dialog", { name: "Revoke this key?" }).getByRole("button", { name: "Revoke" }).click();
  await page
    .getByRole("row", { name: /ci agent/ })
    .getByText(/revoked/)
    .waitFor();
  await assert.rejects(callTool(secret, "whoami", {}), /Invalid or revoked/);
  assert.deepEqual(errors, []);
  await page.context().close();
});

test("a read-only key is offered no edit, delete or key controls", async () => {
  const { page, errors } = await signIn(readKey);
  assert.match(await page.locator(".who").textContent(), /read/);
  assert.equal(await page.getByRole("link", { name: "Keys" }).count(), 0);
  await page.getByRole("link", { name: /Postgres 16/ }).click();
  await page.getByTestId("memory-content").filter({ hasText: "Postgres 16" }).waitFor();
  assert.equal(await page.getByRole("button", { name: /Delete/ }).count(), 0);
  assert.equal(await page.getByRole("button", { name: /Save changes|Revoke|Create key/ }).count(), 0);
  assert.equal(await page.getByLabel("Tags (comma-separated)").count(), 0);
  await screenshot(page, "dashboard-11-read-only");
  await page.goto(`${BASE_URL}/dashboard#/keys`);
  await page.getByRole("alert").filter({ hasText: "admin scope" }).waitFor();
  assert.equal(await page.getByRole("button", { name: /Create key|Revoke/ }).count(), 0);
  assert.deepEqual(errors, []);
  await page.context().close();
});
