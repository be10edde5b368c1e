// Starts the real worker with `wrangler dev` on a fresh local state, offline, and talks to it over HTTP.
import { spawn } from "node:child_process";
import { mkdirSync, rmSync, writeFileSync } from "node:fs";
import { fireCrons } from "../../scripts/crons.mjs";
import { migrateAll } from "../../scripts/migrate.mjs";

// BENCH_PORT lets two benches run side by side; each port has its own local state.
const PORT = Number(process.env.BENCH_PORT ?? 8799);
const DIR = `.bench/${PORT}`;
const STATE = `${DIR}/state`;
const VARS = `${DIR}/bench.vars`;
const WRANGLER = "node_modules/wrangler/bin/wrangler.js";
export const BASE = `http://127.0.0.1:${PORT}`;
/** wrangler dev's inspector (worker-cpu.mjs profiles the worker through it); beside the port, one per bench. */
const INSPECTOR_PORT = PORT + 10_000;
export const INSPECTOR_URL = `ws://127.0.0.1:${INSPECTOR_PORT}/ws`;
export const ADMIN_TOKEN = "bench-admin-token";
/** The worker's embedder: "local" (lexical, the default) or "use-lite" (a sentence encoder, see embedderVars). */
export const BENCH_EMBEDDER = process.env.BENCH_EMBEDDER ?? "local";

/**
 * Starts wrangler dev on the bench port. `fresh` (the default) starts from empty state; `vars` adds settings (FAULTS,
 * say). wrangler.toml's crons fire on their schedule, as in production (scripts/crons.mjs): a local queue may lose
 * messages, and the every-minute pass is what re-sends their jobs. `kill()` ends the whole process group with
 * SIGKILL, as a crash would: nothing gets to finish. `crons: false` fires none, for a bench that drives them itself.
 */
/** The running worker's JOB_DISPATCH (wrangler.toml's default unless the bench or its caller names one). */
let dispatch = "per-minute";
export const dispatchMode = () => dispatch;

/**
 * The minute cron, fired now: with JOB_DISPATCH=per-minute it sends the jobs of what was written since the last one, so
 * a bench waiting on them fires it rather than wait out the minute (production's cron would have fired by then).
 */
export async function fireMinutePass() {
  await fetch(`${BASE}/__scheduled?cron=${encodeURIComponent("* * * * *")}`);
}

/** The 15-minute sweep, fired now. */
export async function fireSweep() {
  await fetch(`${BASE}/__scheduled?cron=${encodeURIComponent("*/15 * * * *")}`);
}

export async function startWorker({ fresh = true, vars = {}, crons = true } = {}) {
  if (fresh) rmSync(DIR, { recursive: true, force: true });
  mkdirSync(DIR, { recursive: true });
  // HYBRID_VECTOR_WEIGHT, SEARCH_STAGES, AUTO_SUMMARIZE and EMBEDDING_CHANCE_SIMILARITY from the caller's environment
  // let one compare fusion weights, search stages, ingest with or without auto-summarize, and an embedder's chance level.
  // LLM likewise: memory extraction is off unless asked for (LLM=local), so the search and ingest figures stay those of
  // the stored turns alone; the extraction suites start a worker of their own with it on.
  const passed = [
    "HYBRID_VECTOR_WEIGHT",
    "SEARCH_STAGES",
    "AUTO_SUMMARIZE",
    "EMBEDDING_CHANCE_SIMILARITY",
    "LLM",
    "JOB_DISPATCH",
  ]
    .flatMap((name) => (process.env[name] !== undefined ? [`${name}=${process.env[name]}\n`] : []))
    .join("");
  const llm = vars.LLM === undefined && process.env.LLM === undefined ? "LLM=off\n" : "";
  const extra = Object.entries(vars)
    .map(([name, value]) => `${name}=${value}\n`)
    .join("");
  dispatch = vars.JOB_DISPATCH ?? process.env.JOB_DISPATCH ?? "per-minute";
  // The usage log is written 250 ms after a call instead of 20 s: the bench reads it once it has stopped growing.
  const flush = vars.FLUSH_USAGE_MS === undefined ? "FLUSH_USAGE_MS=250\n" : "";
  writeFileSync(
    VARS,
    `ADMIN_TOKEN=${ADMIN_TOKEN}\n${await embedderVars()}VECTOR_INDEX=local\n${llm}${flush}${passed}${extra}`,
  );
  await migrateAll({ persistTo: STATE, quiet: true });
  const child = spawn(
    process.execPath,
    [
      WRANGLER,
      "dev",
      "--local",
      "--port",
      String(PORT),
      "--inspector-port",
      String(INSPECTOR_PORT),
      "--persist-to",
      STATE,
      "--env-file",
      VARS,
      "--log-level",
      "error",
      "--show-interactive-dev-session=false",
      "--test-scheduled",
    ],
    { stdio: ["ignore", "ignore", "inherit"], env: { ...process.env, CI: "true" }, detached: true },
  );
  for (let i = 0; i < 120; i++) {
    try {
      if ((await fetch(`${BASE}/health`)).ok) {
        const stopCrons = crons ? fireCrons(BASE) : () => undefined;
        return { stop: () => (stopCrons(), stopChild(child)), kill: () => (stopCrons(), killGroup(child)) };
      }
    } catch {}
    await sleep(500);
  }
  child.kill("SIGTERM");
  throw new Error("worker did not start");
}

/**
 * The embedder's settings: the local lexical one (256 dimensions), or with BENCH_EMBEDDER=use-lite a sentence encoder
 * served on this machine (sentence-embedder.mjs) that the worker reaches through its OpenAI-compatible adapter,
 * started once for the whole bench.
 */
async function embedderVars() {
  const chosen = BENCH_EMBEDDER;
  if (chosen === "local") return "EMBEDDER=local\nEMBEDDING_DIMENSIONS=256\n";
  if (chosen !== "use-lite") throw new Error(`BENCH_EMBEDDER: 'local' or 'use-lite', not '${chosen}'`);
  sentenceEmbedder ??= import("./sentence-embedder.mjs").then((m) => m.startSentenceEmbedder());
  const { url, model, dimensions } = await sentenceEmbedder;
  return `EMBEDDER=openai\nOPENAI_BASE_URL=${url}\nEMBEDDING_MODEL=${model}\nEMBEDDING_DIMENSIONS=${dimensions}\n`;
}
let sentenceEmbedder = null;

/** SIGKILL to wrangler and workerd at once; resolves when the port is free. */
async function killGroup(child) {
  const exited = new Promise((resolve) => child.once("exit", resolve));
  process.kill(-child.pid, "SIGKILL");
  await exited;
  await stopChild(child);
}

/** Resolves once wrangler has exited and the port no longer answers, so a restart can bind it. */
async function stopChild(child) {
  if (child.exitCode === null && child.signalCode === null) {
    const exited = new Promise((resolve) => child.once("exit", resolve));
    child.kill("SIGTERM");
    await exited;
  }
  for (let i = 0; i < 40; i++) {
    try {
      await fetch(`${BASE}/health`);
    } catch {
      return;
    }
    await sleep(250);
  }
}

export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** The operator admin API (ADMIN_TOKEN), for tenants and keys. */
export async function admin(method, path, body) {
  const response = await fetch(`${BASE}/admin${path}`, {
    method,
    headers: { authorization: `Bearer ${ADMIN_TOKEN}`, "content-type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  if (!response.ok) throw new Error(`admin ${method} ${path}: ${response.status} ${await response.text()}`);
  return response.json();
}

/**
 * A tenant as a client sees it. Keys rotate before the per-key rate limit (600/min) would bite, and the
 * tenant's own limit across its keys (calls_per_minute) is lifted, so the figures measure the server,
 * not the limiter. `shard`: the shard to place it on (else the one with the least data).
 */
export async function newTenant(name, shard) {
  const tenant = await admin("POST", "/tenants", shard === undefined ? { name } : { name, shard });
  await admin("PATCH", `/tenants/${tenant.tenant_id}`, { quotas: { calls_per_minute: "unlimited" } });
  let key = null;
  let used = 0;
  /** The limit counts tool calls: a batch of 50 spends 50. */
  const currentKey = async (calls = 1) => {
    if (!key || used + calls > 500) {
      key = (await admin("POST", `/tenants/${tenant.tenant_id}/keys`, { name: "bench", scopes: ["write"] })).api_key;
      used = 0;
    }
    used += calls;
    return key;
  };
  /** One tools/call; returns the tool result and the client-observed latency in ms. */
  const call = async (name, args) => {
    const started = performance.now();
    const body = await post(await currentKey(), {
      jsonrpc: "2.0",
      method: "tools/call",
      params: { name, arguments: args },
      id: 1,
    });
    const ms = performance.now() - started;
    if (body.error) throw new Error(`${name}: ${JSON.stringify(body.error)}`);
    return { result: body.result, ms };
  };
  /** Many tools/calls in JSON-RPC batches of ≤ 50. */
  const callMany = async (calls) => {
    const results = [];
    for (let i = 0; i < calls.length; i += 50) {
      const slice = calls.slice(i, i + 50);
      const body = await post(
        await currentKey(slice.length),
        slice.map(([name, args], j) => ({
          jsonrpc: "2.0",
          method: "tools/call",
          params: { name, arguments: args },
          id: i + j,
        })),
      );
      for (const answer of body.sort((a, b) => a.id - b.id)) {
        if (answer.error) throw new Error(JSON.stringify(answer.error));
        results.push(answer.result);
      }
    }
    return results;
  };
  const stats = () => admin("GET", `/tenants/${tenant.tenant_id}/stats`);
  /** Waits until the queue consumer has embedded everything; returns the seconds it took. */
  const drainEmbeddings = () => until((s) => s.pending_embeddings === 0);
  /** Waits until every item is embedded and auto-linked; returns the seconds it took. */
  const settle = () => until((s) => s.pending_embeddings === 0 && s.pending_links === 0);
  /** Waits until the tenant's stats say `done`, firing the minute pass every 2 s meanwhile when it sends the jobs. */
  const until = async (done) => {
    const started = performance.now();
    let fired = -Infinity;
    for (;;) {
      if (done(await stats())) return (performance.now() - started) / 1000;
      if (dispatch === "per-minute" && performance.now() - fired > 2000) {
        await fireMinutePass();
        fired = performance.now();
      }
      await sleep(250);
    }
  };
  /**
   * Waits until the minute passes have built the tenant's keyword posting blocks (keyword-blocks.test.ts),
   * firing the pass instead of waiting out the minutes, at least once, so that the keyword index's segments are
   * merged as well (keyword-segments.ts), as a minute after the writes in production; returns the seconds it took.
   */
  const postingBlocks = async () => {
    const started = performance.now();
    do {
      await fireMinutePass();
      await sleep(250);
    } while ((await stats()).keyword_blocks_due !== 0);
    return (performance.now() - started) / 1000;
  };
  /** Waits until the usage log (written FLUSH_USAGE_MS after each response) holds `calls` calls. */
  const logged = async (calls) => {
    for (;;) {
      if ((await stats()).tool_calls >= calls) return;
      await sleep(100);
    }
  };
  return {
    id: tenant.tenant_id,
    shard: tenant.shard,
    call,
    callMany,
    stats,
    drainEmbeddings,
    settle,
    postingBlocks,
    logged,
    newKey: async () =>
      (await admin("POST", `/tenants/${tenant.tenant_id}/keys`, { name: "bench", scopes: ["write"] })).api_key,
  };
}

async function post(key, body) {
  const response = await fetch(`${BASE}/jsonrpc`, {
    method: "POST",
    headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
    body: JSON.stringify(body),
  });
  if (response.status === 429) throw new Error("rate limited");
  return response.json();
}
