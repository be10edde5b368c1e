// The harness itself: Chromium starts, reaches the worker, and a page's errors are caught.
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { BASE_URL, launchBrowser, openPage } from "./browser.mjs";

let browser;
before(async () => {
  browser = await launchBrowser();
});
after(() => browser?.close());

test("Chromium reaches the worker's health route", async () => {
  const { page, errors } = await openPage(browser);
  const response = await page.goto(`${BASE_URL}/health`);
  assert.equal(response.status(), 200);
  assert.match(await page.textContent("body"), /ok/i);
  assert.deepEqual(errors, []);
});
