import { spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type AgentRun, FACT } from "../../../examples/cloudflare-agent/src/run";
import { devSecrets, freePort } from "../../fixtures/dev-server";

// examples/cloudflare-agent: a Cloudflare Agents SDK Agent (its own Worker and Durable Object, run by `wrangler dev`
// in workerd on a port of its own) adds the dev server with addMcpServer and an API key header, lists its tools,
// stores a memory, finds it by search, and receives the server's error for a refused call. No model is called.

/** Starts the example with `wrangler dev` against the dev server's MCP URL; resolves once it answers (60 s). */
async function startAgentWorker(mcpUrl: string): Promise<{ url: string; stop: () => void }> {
  const port = await freePort();
  const state = mkdtempSync(join(tmpdir(), "agent-state-"));
  const args = [
    "node_modules/wrangler/bin/wrangler.js",
    "dev",
    "-c",
    "examples/cloudflare-agent/wrangler.jsonc",
    "--local",
    "--port",
    String(port),
    "--ip",
    "127.0.0.1",
    "--persist-to",
    state,
    "--log-level",
    "warn",
    "--var",
    `CONTEXT_EDGE_URL:${mcpUrl}`,
    "--var",
    `CONTEXT_EDGE_KEY:${devSecrets().key}`,
  ];
  const worker = spawn(process.execPath, args, {
    stdio: ["ignore", "pipe", "pipe"],
    detached: true,
    env: { ...process.env, WRANGLER_SEND_METRICS: "false" },
  });
  let output = "";
  worker.stdout.on("data", (chunk) => (output += chunk));
  worker.stderr.on("data", (chunk) => (output += chunk));
  const stop = () => {
    if (worker.pid && worker.exitCode === null) process.kill(-worker.pid, "SIGTERM");
    rmSync(state, { recursive: true, force: true });
  };
  const url = `http://127.0.0.1:${port}`;
  // The example's own 404 for / says its Worker runs (not wrangler's proxy answering for it).
  let last = "no answer";
  for (let i = 0; i < 240; i++) {
    if (worker.exitCode !== null) break;
    const status = await fetch(url).then(
      (r) => r.status,
      () => undefined,
    );
    if (status === 404) return { url, stop };
    if (status !== undefined) last = `status ${status}`;
    await new Promise((r) => setTimeout(r, 250));
  }
  stop();
  throw new Error(
    `examples/cloudflare-agent did not start under wrangler dev (${worker.exitCode !== null ? `exit ${worker.exitCode}` : `${last} in 60 s`}):\n${output.slice(-3000)}`,
  );
}

/** The Cloudflare agent example's cases, against the dev server at `url()` (test/node/dev-server.test.ts starts it). */
export function cloudflareAgentCases(url: () => string) {
  describe("a Cloudflare Agents SDK Agent with addMcpServer (examples/cloudflare-agent, in workerd)", () => {
    let agentWorker: { url: string; stop: () => void } | undefined;
    beforeAll(async () => {
      agentWorker = await startAgentWorker(`${url()}/mcp?toolsets=all`);
    }, 90_000);
    afterAll(() => agentWorker?.stop());

    it("lists every tool, stores a memory, finds it by search and receives the server's error", {
      timeout: 60_000,
    }, async () => {
      const listed = await fetch(`${url()}/jsonrpc`, {
        method: "POST",
        headers: { authorization: `Bearer ${devSecrets().key}`, "content-type": "application/json" },
        body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/list" }),
      }).then((r) => r.json() as Promise<{ result: { tools: { name: string }[] } }>);
      const names = listed.result.tools.map((t) => t.name).sort();
      // The agent's instance name is the namespace it remembers in.
      const instance = `cf-agent-${Date.now().toString(36)}`;
      const response = await fetch(`${agentWorker!.url}/agents/memory-agent/${instance}`, { method: "POST" });
      const body = await response.text();
      expect(response.status, body).toBe(200);
      const run = JSON.parse(body) as AgentRun;
      expect(run.state).toBe("ready");
      expect([...run.tools].sort()).toEqual(names);
      // getAITools() converted every tool's schema (it skips one it cannot).
      expect([...run.aiTools].sort()).toEqual(names);
      expect(run.stored).toMatchObject({ success: true, namespace: instance });
      expect(run.found[0]).toBe(FACT);
      expect(JSON.parse(run.error)).toEqual({
        error: { code: "INVALID_PARAMETER", message: "content must not be empty", details: { parameter: "content" } },
      });
    });
  });
}
