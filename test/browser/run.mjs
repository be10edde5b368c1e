#!/usr/bin/env node
// `npm run test:browser`: the pages (consent, dashboard) in a real headless Chromium. Starts the worker
// with `wrangler dev` on a fresh local state (as the bench does), then runs every test/browser/*.test.mjs
// with node's test runner. Needs Chromium: `apt-get install chromium` (CHROMIUM_PATH overrides the path).
import { spawn } from "node:child_process";
import { existsSync, readdirSync } from "node:fs";

process.env.BENCH_PORT ??= "8797";
const { startWorker, BASE, ADMIN_TOKEN } = await import("../bench/worker.mjs");

const chromium = process.env.CHROMIUM_PATH ?? "/usr/bin/chromium";
if (!existsSync(chromium)) {
  console.error(`Chromium not found at ${chromium}: apt-get install chromium (or set CHROMIUM_PATH)`);
  process.exit(1);
}
// `node test/browser/run.mjs test/browser/x.test.mjs` runs only the files named; none: every one.
const named = process.argv.slice(2);
const files =
  named.length > 0
    ? named
    : readdirSync("test/browser")
        .filter((f) => f.endsWith(".test.mjs"))
        .map((f) => `test/browser/${f}`);

// Documents past 64 KiB convert in a queued job here, so the documents page's converting state is tried too.
const worker = await startWorker({ vars: { DOCUMENT_QUEUE_BYTES: "65536" } });
let status = 1;
try {
  const child = spawn(process.execPath, ["--test", "--test-concurrency=1", ...files], {
    stdio: "inherit",
    env: { ...process.env, BASE_URL: BASE, ADMIN_TOKEN, CHROMIUM_PATH: chromium },
  });
  status = await new Promise((resolve) => child.on("exit", (code) => resolve(code ?? 1)));
} finally {
  await worker.stop();
}
process.exit(status);
