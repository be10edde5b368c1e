#!/usr/bin/env node
import { parseArgs } from "node:util";
import { Client as ClientV2, StreamableHTTPClientTransport as TransportV2 } from "@modelcontextprotocol/client";
// `npm run smoke -- --url URL --key KEY`: an end-to-end check of any deployment (local or remote) through
// its public surface, as an agent and its operator meet it. It writes one memory into a project of its own
// (smoke-<time>-<random>) and deletes that project at the end, whatever happened in between. Prints each
// step's result and time; exits 1 on any failure, 2 on bad arguments. The key needs the read, write and
// admin scopes (the export and the project deletion are admin routes); `npm run dev` prints such a key.
import { Client as ClientV1 } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport as TransportV1 } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const USAGE =
  "usage: npm run smoke -- --url https://<worker>.workers.dev --key <API key with read, write and admin scopes> [--timeout 150]";
/**
 * How long the background jobs (embedding) and the project deletion may take before the step fails: with
 * JOB_DISPATCH=per-minute the minute cron sends a write's jobs, up to a minute after it.
 */
const DEFAULT_SETTLE_SECONDS = 150;

export async function smoke({ url, key, settleSeconds = DEFAULT_SETTLE_SECONDS, log = console.log }) {
  const base = url.replace(/\/+$/, "");
  const project = `smoke-${Date.now().toString(36)}-${Math.random().toString(36).slice(2, 8)}`;
  const nonce = `zq${Math.random().toString(36).slice(2, 10)}`;
  const content = `Smoke check ${nonce}: the lighthouse keeper repaints the harbour shutters every spring.`;
  const results = [];
  const state = {};

  async function step(name, run) {
    const started = performance.now();
    try {
      const detail = await run();
      const ms = performance.now() - started;
      results.push({ name, ok: true, ms });
      log(`pass  ${name.padEnd(34)} ${ms.toFixed(0).padStart(6)} ms${detail ? `  ${detail}` : ""}`);
      return true;
    } catch (error) {
      const ms = performance.now() - started;
      // fetch() says only "fetch failed"; its cause names the reason (ECONNREFUSED, ENOTFOUND, a TLS error).
      const message = error.cause ? `${error.message} (${error.cause.code ?? error.cause.message})` : error.message;
      results.push({ name, ok: false, ms, error: message });
      log(`FAIL  ${name.padEnd(34)} ${ms.toFixed(0).padStart(6)} ms  ${message}`);
      return false;
    }
  }

  const get = async (path, headers = {}) => {
    const response = await fetch(`${base}${path}`, { headers });
    const text = await response.text();
    if (!response.ok) throw new Error(`GET ${path}: HTTP ${response.status} ${text.slice(0, 200)}`);
    return text;
  };
  const auth = { authorization: `Bearer ${key}` };

  let client;
  async function call(name, args) {
    const result = await client.callTool({ name, arguments: args });
    const text = result.content?.[0]?.text ?? "";
    if (result.isError) throw new Error(`${name}: ${text.slice(0, 300)}`);
    return result.structuredContent ?? JSON.parse(text);
  }
  const until = async (what, check) => {
    const deadline = Date.now() + settleSeconds * 1000;
    for (let wait = 250; ; wait = Math.min(2000, wait * 2)) {
      const value = await check();
      if (value) return value;
      if (Date.now() > deadline) throw new Error(`${what} not within ${settleSeconds} s`);
      await new Promise((r) => setTimeout(r, wait));
    }
  };

  const ok =
    (await step("health", async () => {
      const body = JSON.parse(await get("/health"));
      if (body.status !== "ok") throw new Error(`health says ${JSON.stringify(body)}`);
      return `${body.name} ${body.version}`;
    })) &&
    (await step("OAuth metadata", async () => {
      const server = JSON.parse(await get("/.well-known/oauth-authorization-server"));
      for (const field of ["issuer", "authorization_endpoint", "token_endpoint"])
        if (!server[field]) throw new Error(`authorization server metadata lacks ${field}`);
      const resource = JSON.parse(await get("/.well-known/oauth-protected-resource/mcp"));
      if (!String(resource.resource).endsWith("/mcp") || !resource.authorization_servers?.length)
        throw new Error(`protected resource metadata: ${JSON.stringify(resource).slice(0, 200)}`);
      return `issuer ${server.issuer}`;
    })) &&
    (await step("MCP 2025 era (SDK v1): tools/list", async () => {
      const v1 = new ClientV1({ name: "context-edge-smoke", version: "1.0.0" });
      await v1.connect(new TransportV1(new URL(`${base}/mcp?toolsets=all`), { requestInit: { headers: auth } }));
      const { tools } = await v1.listTools();
      await v1.close();
      if (tools.length === 0) throw new Error("no tools listed");
      return `${tools.length} tools`;
    })) &&
    (await step("MCP 2026-07-28 (SDK v2): tools/list", async () => {
      client = new ClientV2(
        { name: "context-edge-smoke", version: "1.0.0" },
        { versionNegotiation: { mode: { pin: "2026-07-28" } } },
      );
      await client.connect(new TransportV2(new URL(`${base}/mcp?toolsets=all`), { requestInit: { headers: auth } }));
      const { tools } = await client.listTools();
      if (tools.length === 0) throw new Error("no tools listed");
      return `${tools.length} tools`;
    })) &&
    (await step("key scopes (whoami)", async () => {
      const me = await call("whoami", {});
      const missing = ["read", "write", "admin"].filter((s) => !me.scopes.includes(s));
      if (missing.length > 0)
        throw new Error(
          `the key lacks the ${missing.join(", ")} scope(s) the smoke test needs; make one with scopes ["read","write","admin"]`,
        );
      if (me.projects !== null)
        throw new Error(
          `the key is limited to projects ${me.projects.join(", ")}; the smoke test writes a project of its own`,
        );
      state.tenant = me.tenant_id;
      return `tenant ${me.tenant_id}`;
    })) &&
    (await step("store (memory_store)", async () => {
      const stored = await call("memory_store", { content, namespace: project, tags: ["smoke"] });
      state.id = stored.id;
      return `${stored.id} in ${project}`;
    })) &&
    (await step("search (keyword, at once)", async () => {
      const found = await call("search", { query: `lighthouse keeper shutters ${nonce}`, project });
      if (!found.results.some((r) => r.item_id === state.id))
        throw new Error(`the stored memory is not among ${found.results.length} results`);
    })) &&
    (await step("jobs settle (embedded_at set)", async () => {
      const item = await until("embedding", async () => {
        const got = await call("memory_get", { id: state.id });
        return got.history?.embedded_at ? got : null;
      });
      return `embedded at ${item.history.embedded_at}`;
    })) &&
    (await step("embeddings present (vector search)", async () => {
      const found = await call("search", {
        query: `lighthouse keeper repaints harbour shutters ${nonce}`,
        project,
        mode: "vector",
      });
      const hit = found.results.find((r) => r.item_id === state.id);
      if (!hit) throw new Error(`vector search does not find the embedded memory (${found.results.length} results)`);
      return `similarity ${hit.similarity}`;
    })) &&
    (await step("cache hit (memory_context_build)", async () => {
      const request = { query: `Who repaints the harbour shutters? ${nonce}`, namespace: project, token_budget: 500 };
      const first = await call("memory_context_build", request);
      const second = await call("memory_context_build", request);
      if (second.cache_hit !== true)
        throw new Error(
          `the second identical build was not a cache hit (first: ${first.cache_hit}, second: ${second.cache_hit})`,
        );
    })) &&
    (await step("export (NDJSON)", async () => {
      const text = await get(
        `/admin/tenants/${encodeURIComponent(state.tenant)}/export?project=${encodeURIComponent(project)}`,
        auth,
      );
      const lines = text.split("\n").filter(Boolean);
      if (!text.includes(state.id)) throw new Error(`the export (${lines.length} lines) lacks the stored memory`);
      return `${lines.length} lines`;
    }));

  // The project is deleted whatever failed after the store, so a failed run leaves nothing behind.
  if (state.id) {
    await step("delete (project, then gone)", async () => {
      const response = await fetch(
        `${base}/admin/tenants/${encodeURIComponent(state.tenant)}/projects/${encodeURIComponent(project)}`,
        { method: "DELETE", headers: auth },
      );
      if (response.status !== 200 && response.status !== 202)
        throw new Error(`DELETE project: HTTP ${response.status} ${(await response.text()).slice(0, 200)}`);
      await until("project deletion", async () => {
        const found = await call("search", { query: `lighthouse keeper shutters ${nonce}`, project });
        const item = await client.callTool({ name: "memory_get", arguments: { id: state.id } });
        return found.results.length === 0 && item.isError === true;
      });
    });
  }
  await client?.close().catch(() => {});
  const failed = results.filter((r) => !r.ok);
  const total = results.reduce((sum, r) => sum + r.ms, 0);
  log(
    `${failed.length === 0 && ok ? "PASS" : "FAIL"}: ${results.length - failed.length} of ${results.length} steps passed in ${(total / 1000).toFixed(1)} s (${base})`,
  );
  return { ok: ok && failed.length === 0, results };
}

if (import.meta.url === `file://${process.argv[1]}`) {
  let args;
  try {
    args = parseArgs({
      options: { url: { type: "string" }, key: { type: "string" }, timeout: { type: "string" } },
    }).values;
  } catch (error) {
    console.error(`${error.message}\n${USAGE}`);
    process.exit(2);
  }
  const key = args.key ?? process.env.CONTEXT_EDGE_KEY;
  if (!args.url || !key) {
    console.error(`${!args.url ? "--url" : "--key"} is missing\n${USAGE}`);
    process.exit(2);
  }
  try {
    new URL(args.url);
  } catch {
    console.error(`--url '${args.url}' is not a URL\n${USAGE}`);
    process.exit(2);
  }
  const settleSeconds = args.timeout === undefined ? DEFAULT_SETTLE_SECONDS : Number(args.timeout);
  if (!(settleSeconds > 0)) {
    console.error(`--timeout must be a positive number of seconds\n${USAGE}`);
    process.exit(2);
  }
  const { ok } = await smoke({ url: args.url, key, settleSeconds });
  process.exit(ok ? 0 : 1);
}
