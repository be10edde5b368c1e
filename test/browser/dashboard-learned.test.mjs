// What the dashboard shows of memories learned from a conversation: the list's kind badge, and a derived memory's
// page with its kind, subject, validity, source turns and extraction log (memory_history), through a supersession.
//
// Extraction needs a model. The worker run.mjs starts for every browser test runs wrangler.toml's LLM (workers-ai,
// which has no offline stand-in), so this file starts a worker of its own with LLM=local, the offline rule-based model
// `npm run dev` uses, on the port below run.mjs's (8796 by default) with its own fresh state.
import assert from "node:assert/strict";
import { after, before, test } from "node:test";

process.env.BENCH_PORT = String(Number(process.env.BENCH_PORT ?? 8797) - 1);
const { startWorker, BASE, ADMIN_TOKEN, sleep } = await import("../bench/worker.mjs");
// browser.mjs reads the server's address and admin token when it loads: point it at this file's worker.
process.env.BASE_URL = BASE;
process.env.ADMIN_TOKEN = ADMIN_TOKEN;
const {
  BASE_URL,
  callTool,
  launchBrowser,
  screenshot,
  signIn: signInAs,
  tenantWithKey,
} = await import("./browser.mjs");

const PROJECT = "acme-travel";
const CONVERSATION = "maya-moves";

let worker;
let browser;
let tenant;
let turns; // the ingested messages' ids, in order
let tea; // the text of the preference learned from the first turn
const ids = {};

before(async () => {
  worker = await startWorker({ vars: { LLM: "local" } });
  browser = await launchBrowser();
  tenant = await tenantWithKey("Learned Co", ["admin"]);
  await callTool(tenant.key, "memory_store", {
    content: "The office wifi password rotates on the first Monday of each month.",
    namespace: PROJECT,
    tags: ["office"],
  });
  const ingested = await callTool(tenant.key, "memory_ingest", {
    conversation_id: CONVERSATION,
    project_id: PROJECT,
    messages: [
      {
        role: "user",
        speaker: "Maya",
        content: "I live in Lisbon and I love green tea.",
        timestamp: "2026-03-02T09:00:00Z",
      },
      { role: "assistant", content: "Noted, Maya.", timestamp: "2026-03-02T09:00:05Z" },
      { role: "user", speaker: "Maya", content: "I moved to Porto last week.", timestamp: "2026-03-09T09:00:00Z" },
    ],
  });
  assert.equal(ingested.extraction, "queued", "extraction is on by default with LLM=local");
  turns = ingested.ids;

  // The extraction job runs from the queue within seconds of the ingest.
  const derived = await waitFor(async () => {
    const { memories } = await callTool(tenant.key, "memory_list", { project: PROJECT, limit: 50 });
    return memories.find((m) => m.derived === true && m.memory_kind === "preference");
  }, "a derived memory in memory_list");
  ids.tea = derived.id;
  tea = derived.preview; // "Maya loves green tea." (the rules' wording)
  // "I moved to Porto" replaced "I live in Lisbon" under the key maya.home_city: the old memory is superseded.
  const { events } = await waitFor(async () => {
    const history = await callTool(tenant.key, "memory_history", { conversation_id: CONVERSATION });
    return history.events.some((e) => e.event === "superseded") ? history : null;
  }, "the superseded event in memory_history");
  const superseded = events.find((e) => e.event === "superseded");
  ids.lisbon = superseded.memory_id;
  ids.porto = superseded.superseded_by;
});

after(async () => {
  await browser?.close();
  await worker?.stop();
});

/** Polls `probe` every 250 ms until it answers something, for up to 20 s. */
async function waitFor(probe, what) {
  const deadline = Date.now() + 20_000;
  for (;;) {
    const value = await probe();
    if (value) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(250);
  }
}

const signIn = (key) => signInAs(browser, key);

/** The rows of an extraction log whose event is `event` (the header's "Superseded by" is not one). */
function logRows(page, log, event) {
  return log.getByRole("row").filter({ has: page.getByRole("cell", { name: event, exact: true }) });
}

/** A row of the memories list, by its text. */
function row(page, text) {
  return page
    .getByRole("list", { name: "Memories" })
    .getByRole("listitem")
    .filter({ has: page.getByRole("link", { name: text, exact: true }) });
}

test("the list marks derived memories with their kind and subject; stored ones and turns carry no badge", async () => {
  const { page, errors } = await signIn(tenant.key);
  const learned = row(page, tea);
  await learned.waitFor();
  assert.equal(await learned.getByTitle("Learned from a conversation").textContent(), "preference");
  await learned.getByText("about Maya", { exact: true }).waitFor();
  const stored = row(page, "The office wifi password rotates on the first Monday of each month.");
  await stored.waitFor();
  assert.equal(await stored.getByTitle("Learned from a conversation").count(), 0, "stored as given: no badge");
  const turn = row(page, "I live in Lisbon and I love green tea.");
  await turn.waitFor();
  assert.equal(await turn.getByTitle("Learned from a conversation").count(), 0, "a turn is not derived");
  await screenshot(page, "learned-01-list-badges");
  assert.deepEqual(errors, []);
  await page.context().close();
});

test("a derived memory's page shows its kind, subject, validity, source turn and extraction log", async () => {
  const { page, errors } = await signIn(tenant.key);
  await row(page, tea).getByRole("link").click();
  await page.waitForURL(new RegExp(`#/memory/${ids.tea}$`));
  await page.getByTestId("memory-content").filter({ hasText: tea }).waitFor();
  const learned = page.getByRole("region", { name: "Learned from the conversation" });
  await learned.getByText("preference", { exact: true }).waitFor();
  await learned.getByText("Maya", { exact: true }).waitFor();
  await learned.getByText("holds now", { exact: true }).waitFor();
  const source = learned
    .getByRole("list", { name: "Source turns" })
    .getByRole("link", { name: /I live in Lisbon and I love green tea/ });
  await source.waitFor(); // its text comes with the history, in the same request
  assert.equal(await source.getAttribute("href"), `#/memory/${turns[0]}`);
  const log = learned.getByRole("table", { name: "Extraction log" });
  const added = logRows(page, log, "added");
  await added.first().waitFor();
  assert.equal(await added.count(), 1);
  assert.match(await added.textContent(), /local-rules/);
  assert.match(await added.textContent(), /\d+ ms/, "latency");
  await screenshot(page, "learned-02-derived-memory");

  // The source turn's own page: a conversation message, with nothing learned to show.
  await source.click();
  await page.getByTestId("memory-content").filter({ hasText: "I live in Lisbon and I love green tea." }).waitFor();
  assert.equal(await page.getByRole("region", { name: "Learned from the conversation" }).count(), 0);
  assert.deepEqual(errors, []);
  await page.context().close();
});

test("a superseded memory says until when it held and links to the memory that replaced it", async () => {
  const { page, errors } = await signIn(tenant.key);
  await page.goto(`${BASE_URL}/dashboard#/memory/${ids.lisbon}`);
  await page.getByTestId("memory-content").filter({ hasText: "Lisbon" }).waitFor();
  const learned = page.getByRole("region", { name: "Learned from the conversation" });
  await learned.getByText("fact", { exact: true }).waitFor();
  await learned.getByText("maya.home_city", { exact: true }).waitFor();
  // Exact: the log's Why column may say that a later value "holds now".
  assert.equal(await learned.getByText("holds now", { exact: true }).count(), 0, "valid_to is set");
  const log = learned.getByRole("table", { name: "Extraction log" });
  await logRows(page, log, "superseded").waitFor();
  assert.equal(await logRows(page, log, "added").count(), 1);
  await screenshot(page, "learned-03-superseded-memory");

  await learned.getByRole("link", { name: "a newer memory" }).click();
  await page.waitForURL(new RegExp(`#/memory/${ids.porto}$`));
  await page.getByTestId("memory-content").filter({ hasText: "Porto" }).waitFor();
  await page
    .getByRole("region", { name: "Learned from the conversation" })
    .getByText("holds now", { exact: true })
    .waitFor();
  assert.deepEqual(errors, []);
  await page.context().close();
});

test("an operator's key asks for the conversation to be read again; the log says so", async () => {
  const { page, errors } = await signIn(tenant.key);
  await page.goto(`${BASE_URL}/dashboard#/memory/${ids.porto}`);
  await page.getByTestId("memory-content").filter({ hasText: "Porto" }).waitFor();
  const learned = page.getByRole("region", { name: "Learned from the conversation" });
  const again = learned.getByRole("button", { name: "Extract this conversation again" });
  await again.waitFor();
  await again.click();
  await learned.getByRole("status").filter({ hasText: "Queued: its 3 turns will be read again." }).waitFor();
  await screenshot(page, "learned-04-extract-again");
  const history = await waitFor(async () => {
    const { events } = await callTool(tenant.key, "memory_history", { conversation_id: CONVERSATION });
    return events.some((e) => e.event === "reextract") ? events : null;
  }, "the reextract event in memory_history");
  assert.match(history.find((e) => e.event === "reextract").reason, /read again from position 0 with local-rules/);
  assert.deepEqual(errors, []);
  await page.context().close();
});

test("a document uploaded with extraction asked is read by it: its upload line and its details say so", async () => {
  const { page, errors } = await signIn(tenant.key);
  await page.getByRole("link", { name: "Documents", exact: true }).click();
  await page.getByRole("heading", { name: "Documents", exact: true }).waitFor();
  await page.getByLabel(/Extract memories from the files uploaded/).check();
  await page.getByLabel("Files to upload").setInputFiles({
    name: "travel-policy.md",
    mimeType: "text/markdown",
    buffer: Buffer.from(
      "# Travel policy\n\nTrains are booked in standard class.\n\n## Hotels\n\nHotels are booked by the office.",
    ),
  });
  await page
    .getByRole("list", { name: "Uploads" })
    .getByText(/Ready: Travel policy .* memories being extracted/)
    .waitFor();
  const { documents } = await callTool(tenant.key, "memory_list_documents", {});
  const id = documents.find((d) => d.title === "Travel policy").document_id;
  // The extraction job runs from the queue within seconds.
  const read = await waitFor(async () => {
    const d = await callTool(tenant.key, "memory_get_document", { document_id: id });
    return d.extract && d.extracted_chunks === d.chunks ? d : null;
  }, "the document's chunks all read by extraction");
  const listed = page
    .getByRole("list", { name: "Documents" })
    .getByRole("listitem")
    .filter({ hasText: "Travel policy" });
  await listed.getByRole("button", { name: "Travel policy", exact: true }).click();
  await listed.getByText(`extracted (${read.chunks} chunks read)`).waitFor();
  const { events } = await callTool(tenant.key, "memory_history", { document_id: id });
  assert.ok(events.length === 0 || events.every((e) => e.document_id === id), "its decisions name the document");
  await screenshot(page, "learned-05-document-extracted");
  assert.deepEqual(errors, []);
  await page.context().close();
});

test("a key without the admin scope sees no such button", async () => {
  const reader = await tenantWithKey("Learned Reader", ["read", "write"]);
  const { ids: stored } = await callTool(reader.key, "memory_ingest", {
    conversation_id: "c",
    messages: [{ role: "user", speaker: "Li", content: "I love oolong tea.", timestamp: "2026-03-02T09:00:00Z" }],
  });
  const derived = await waitFor(async () => {
    const { memories } = await callTool(reader.key, "memory_list", { limit: 50 });
    return memories.find((m) => m.derived === true);
  }, "a derived memory of the second tenant");
  assert.equal(stored.length, 1);
  const { page, errors } = await signIn(reader.key);
  await page.goto(`${BASE_URL}/dashboard#/memory/${derived.id}`);
  const learned = page.getByRole("region", { name: "Learned from the conversation" });
  await learned.getByText("holds now", { exact: true }).waitFor();
  assert.equal(await learned.getByRole("button", { name: "Extract this conversation again" }).count(), 0);
  assert.deepEqual(errors, []);
  await page.context().close();
});
