// The knowledge graph at 2,000 nodes: stored through the real tools (memories and link_resources), drawn
// by the dashboard in Chromium, and measured: the server's answer, time to the first drawn frame, work per
// animation frame while the layout runs, and redraws while panning and zooming once it has settled.
import assert from "node:assert/strict";
import { writeFileSync } from "node:fs";
import { after, before, test } from "node:test";
import { ARTIFACTS, admin, BASE_URL, launchBrowser, openPage, screenshot, tenantWithKey } from "./browser.mjs";

const NODES = 2000;
const EXTRA_EDGES = 1000;
const TYPES = ["references", "depends_on", "part_of", "related_to"];

let browser;
let tenant;

/** JSON-RPC batches of 50 tool calls, a fresh key every 500 calls (the per-key limit is 600 a minute). */
async function callMany(calls) {
  const results = [];
  let key = null;
  for (let i = 0; i < calls.length; i += 50) {
    if (i % 500 === 0)
      key = (await admin("POST", `/tenants/${tenant.tenantId}/keys`, { name: `seed ${i}`, scopes: ["write"] })).api_key;
    const slice = calls.slice(i, i + 50);
    const response = await fetch(`${BASE_URL}/jsonrpc`, {
      method: "POST",
      headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
      body: JSON.stringify(
        slice.map(([name, args], j) => ({
          jsonrpc: "2.0",
          id: j,
          method: "tools/call",
          params: { name, arguments: args },
        })),
      ),
    });
    const answers = (await response.json()).sort((a, b) => a.id - b.id);
    for (const answer of answers) {
      if (answer.error) throw new Error(JSON.stringify(answer.error));
      results.push(answer.result);
    }
  }
  return results;
}

before(async () => {
  browser = await launchBrowser();
  tenant = await tenantWithKey("Graph Co", ["admin"]);
  // Seeding makes ~4,300 tool calls in seconds, over a tenant's 3,000 a minute (the keys rotate for their own limit).
  await admin("PATCH", `/tenants/${tenant.tenantId}`, { quotas: { calls_per_minute: "unlimited" } });
  // Distinct texts (a number and a rotating topic), so auto-link adds few links of its own.
  const topics = ["billing", "deploys", "auth", "search", "queues", "storage", "alerts", "reports"];
  const batches = Array.from({ length: NODES / 100 }, (_, b) => [
    "memory_batch_store",
    {
      namespace: "graph",
      memories: Array.from({ length: 100 }, (_, i) => ({
        content: `Fact ${b * 100 + i} about ${topics[(b * 100 + i) % 8]}: item ${(b * 100 + i) * 7919} of the graph test`,
      })),
    },
  ]);
  const ids = (await callMany(batches)).flatMap((r) => r.ids);
  // A tree where later nodes attach to earlier ones (a few hubs), plus random cross links.
  let seed = 42;
  const random = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
  const links = [];
  for (let i = 1; i < NODES; i++) links.push([ids[i], ids[Math.floor(random() ** 2 * i)], TYPES[i % 4]]);
  for (let i = 0; i < EXTRA_EDGES; i++) {
    const a = Math.floor(random() * NODES),
      b = Math.floor(random() * NODES);
    if (a !== b) links.push([ids[a], ids[b], TYPES[(i + 1) % 4]]);
  }
  await callMany(
    links.map(([source_id, target_id, relationship_type]) => [
      "link_resources",
      { source_id, target_id, relationship_type },
    ]),
  );
  // Background embedding and auto-linking would compete for the CPU with the measurement: let them finish.
  for (let i = 0; i < 240; i++) {
    const stats = await admin("GET", `/tenants/${tenant.tenantId}/stats`);
    if (stats.pending_embeddings === 0 && stats.pending_links === 0) break;
    await new Promise((r) => setTimeout(r, 500));
  }
});

after(() => browser?.close());

test(`the graph view stays responsive at ${NODES} nodes`, async (t) => {
  const started = performance.now();
  const response = await fetch(`${BASE_URL}/jsonrpc`, {
    method: "POST",
    headers: { authorization: `Bearer ${tenant.key}`, "content-type": "application/json" },
    body: JSON.stringify({
      jsonrpc: "2.0",
      id: 1,
      method: "tools/call",
      params: { name: "get_knowledge_graph", arguments: { max_nodes: NODES } },
    }),
  });
  const answer = await response.json();
  assert.equal(answer.error, undefined, `get_knowledge_graph failed: ${JSON.stringify(answer.error)}`);
  const graph = answer.result;
  const serverMs = performance.now() - started;
  assert.equal(graph.nodes.length, NODES);
  assert.ok(graph.edges.length >= NODES - 1 + EXTRA_EDGES * 0.9, `${graph.edges.length} edges`);

  const { page, errors } = await openPage(browser);
  await page.goto(`${BASE_URL}/dashboard`);
  await page.getByLabel("API key").fill(tenant.key);
  await page.getByRole("button", { name: "Sign in" }).click();
  await page.getByRole("navigation", { name: "Dashboard sections" }).waitFor();

  // Sample animation-frame intervals from the click on "Graph" until the layout has settled.
  await page.evaluate(() => {
    window.__frames = [];
    let last = performance.now();
    const sample = (now) => {
      window.__frames.push(now - last);
      last = now;
      if (!window.__stopSampling) requestAnimationFrame(sample);
    };
    requestAnimationFrame(sample);
  });
  const clicked = Date.now();
  await page.getByRole("link", { name: "Graph", exact: true }).click();
  await page.waitForFunction(() => document.querySelector("canvas.graph")?.dataset.stats, null, { timeout: 30_000 });
  const toFirstFrameMs = Date.now() - clicked;
  await page.waitForFunction(() => JSON.parse(document.querySelector("canvas.graph").dataset.stats).settled, null, {
    timeout: 60_000,
  });
  const toSettledMs = Date.now() - clicked;
  const layoutFrames = await page.evaluate(() => ((window.__stopSampling = true), window.__frames.slice(2)));
  const stats = JSON.parse(await page.locator("canvas.graph").getAttribute("data-stats"));
  await screenshot(page, "dashboard-12-graph-2000");

  // Interaction after settling: wheel zoom and drag pan, each a redraw of every node and edge.
  const canvas = page.locator("canvas.graph");
  const box = await canvas.boundingBox();
  await page.mouse.move(box.x + box.width / 2, box.y + box.height / 2);
  const redraws = [];
  for (let i = 0; i < 10; i++) {
    await page.mouse.wheel(0, i < 5 ? -120 : 120);
    redraws.push(JSON.parse(await canvas.getAttribute("data-stats")).lastDrawMs);
  }
  await page.mouse.down();
  for (let i = 0; i < 10; i++) {
    await page.mouse.move(box.x + box.width / 2 + i * 15, box.y + box.height / 2 + i * 8);
    redraws.push(JSON.parse(await canvas.getAttribute("data-stats")).lastDrawMs);
  }
  await page.mouse.up();
  await page.keyboard.press("+");
  await page.keyboard.press("+");
  await screenshot(page, "dashboard-13-graph-2000-zoomed");

  const sorted = [...layoutFrames].sort((a, b) => a - b);
  const pct = (p) => sorted[Math.min(sorted.length - 1, Math.ceil(p * sorted.length) - 1)];
  const figures = {
    nodes: stats.nodes,
    edges: stats.edges,
    server_get_knowledge_graph_ms: Math.round(serverMs),
    click_to_first_frame_ms: toFirstFrameMs,
    set_data_to_first_frame_ms: stats.firstDrawMs,
    click_to_settled_ms: toSettledMs,
    layout_frames: stats.frames,
    frame_work_ms_avg: stats.frameMsAvg,
    frame_work_ms_max: stats.frameMsMax,
    frame_interval_ms_p50: Math.round(pct(0.5) * 10) / 10,
    frame_interval_ms_p95: Math.round(pct(0.95) * 10) / 10,
    redraw_ms_max_while_panning_zooming: Math.max(...redraws),
  };
  writeFileSync(`${ARTIFACTS}/graph-2000.json`, JSON.stringify(figures, null, 2));
  t.diagnostic(JSON.stringify(figures));

  assert.equal(stats.nodes, NODES);
  assert.ok(toFirstFrameMs < 10_000, `first frame after ${toFirstFrameMs} ms`);
  assert.ok(stats.frameMsAvg < 50, `average frame work ${stats.frameMsAvg} ms`);
  // Intervals between frames also measure the machine (software rendering, the worker and other jobs on
  // 2 cores: 67 ms p95 alone, 167 ms beside another test run); the page's own cost is the frame work above.
  assert.ok(figures.frame_interval_ms_p95 < 400, `p95 frame interval ${figures.frame_interval_ms_p95} ms`);
  assert.ok(
    figures.redraw_ms_max_while_panning_zooming < 50,
    `redraw ${figures.redraw_ms_max_while_panning_zooming} ms`,
  );
  assert.deepEqual(errors, []);
  await page.context().close();
});
