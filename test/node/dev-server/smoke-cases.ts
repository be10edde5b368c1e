import { spawnSync } from "node:child_process";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { devSecrets, freePort } from "../../fixtures/dev-server";
import { removeAccounts, setup } from "../../fixtures/fake-account";

// `npm run smoke` against the newcomer's local server: `npm run dev` (scripts/dev.mjs) on a free port with
// its own state, then the smoke script as a user runs it, with the dev key the server printed. Also what the
// script says for a wrong key, a key without the admin scope, and bad arguments.

function smoke(...args: string[]) {
  const run = spawnSync(process.execPath, ["scripts/smoke.mjs", ...args], { encoding: "utf8", timeout: 150_000 });
  return { status: run.status, out: run.stdout + run.stderr };
}

/** The smoke script's cases, against the dev server at `server()` (test/node/dev-server.test.ts starts it). */
export function smokeCases(server: () => string) {
  let url = "";
  beforeAll(() => {
    url = server();
  });
  afterAll(removeAccounts);

  describe("npm run smoke against npm run dev", () => {
    it("passes every step with the dev key, printing each step's time", { timeout: 150_000 }, () => {
      const { status, out } = smoke("--url", url, "--key", devSecrets().key);
      for (const step of [
        "health",
        "OAuth metadata",
        "MCP 2025 era (SDK v1): tools/list",
        "MCP 2026-07-28 (SDK v2): tools/list",
        "store (memory_store)",
        "search (keyword, at once)",
        "jobs settle (embedded_at set)",
        "embeddings present (vector search)",
        "cache hit (memory_context_build)",
        "export (NDJSON)",
        "delete (project, then gone)",
      ]) {
        expect(out).toMatch(new RegExp(`^pass  ${step.replace(/[()]/g, "\\$&")}\\s+\\d+ ms`, "m"));
      }
      expect(out).toContain("PASS: 12 of 12 steps passed");
      expect(status).toBe(0);
    });

    it("fails with exit 1 at the first MCP step for a wrong key", { timeout: 60_000 }, () => {
      const { status, out } = smoke("--url", url, "--key", "ce_wrong_0000000000000000000000000000000");
      expect(out).toMatch(
        /^FAIL {2}MCP 2025 era \(SDK v1\): tools\/list .*401|^FAIL {2}MCP 2025 era \(SDK v1\): tools\/list .*(Invalid|invalid|revoked)/m,
      );
      expect(status).toBe(1);
    });

    it("names the missing scope for a key that may not export or delete, and writes nothing", {
      timeout: 60_000,
    }, async () => {
      const created = await fetch(`${url}/admin/tenants/dev/keys`, {
        method: "POST",
        headers: { authorization: `Bearer ${devSecrets().adminToken}`, "content-type": "application/json" },
        body: JSON.stringify({ name: "smoke-no-admin", scopes: ["read", "write"] }),
      });
      expect(created.status).toBe(201);
      const { api_key } = (await created.json()) as { api_key: string };
      const { status, out } = smoke("--url", url, "--key", api_key);
      expect(out).toMatch(/^FAIL {2}key scopes \(whoami\) .*lacks the admin scope/m);
      expect(out).not.toContain("store (memory_store)");
      expect(status).toBe(1);
    });

    it("answers bad arguments with the usage line and exit 2", () => {
      for (const args of [
        ["--key", "x"],
        ["--url", "not a url", "--key", "x"],
        ["--url", url, "--key", "x", "--timeout", "-1"],
        ["--bogus"],
      ]) {
        const { status, out } = smoke(...args);
        expect(out).toContain("usage: npm run smoke -- --url");
        expect(status).toBe(2);
      }
    });

    it("fails with the reason when nothing answers at the URL", async () => {
      const { status, out } = smoke("--url", `http://127.0.0.1:${await freePort()}`, "--key", "x");
      expect(out).toMatch(/^FAIL {2}health .*ECONNREFUSED/m);
      expect(status).toBe(1);
    });
  });

  describe("npm run deploy ends with the smoke test", () => {
    // A fake account whose deploy answers with this dev server's URL; the Worker's ADMIN_TOKEN exists and is
    // given, so deploy makes a key for the smoke test and revokes it afterwards.
    it("runs every smoke step against the deployed URL with a temporary key, then revokes the key", {
      timeout: 150_000,
    }, async () => {
      const { run } = setup({ url, worker: { secrets: ["ADMIN_TOKEN"] } });
      const { adminToken } = devSecrets();
      const { status, out } = run([], { CONTEXT_EDGE_ADMIN_TOKEN: adminToken });
      expect(out).toContain("PASS: 12 of 12 steps passed");
      expect(out).toContain(`MCP URL: ${url}/mcp`);
      expect(status, out).toBe(0);
      // `run` blocked this process for seconds (spawnSync), while the server closed the idle keep-alive socket of the
      // fetches before: let the event loop see that close, or the next fetch reuses the socket ("other side closed").
      await new Promise((resolve) => setTimeout(resolve, 100));
      const admin = (path: string) =>
        fetch(`${url}/admin${path}`, { headers: { authorization: `Bearer ${adminToken}` } }).then(
          (r) => r.json() as Promise<Record<string, unknown>>,
        );
      const { tenants } = (await admin("/tenants")) as { tenants: { tenant_id: string; name: string }[] };
      const tenant = tenants.find((t) => t.name === "deploy-smoke")!;
      const { keys } = (await admin(`/tenants/${tenant.tenant_id}/keys`)) as {
        keys: { name: string; revoked_at: string | null }[];
      };
      expect(keys.length).toBeGreaterThan(0);
      expect(keys.filter((k) => k.revoked_at === null)).toEqual([]);
    });

    it("says how to run the smoke test when the Worker's ADMIN_TOKEN is not known", { timeout: 60_000 }, () => {
      const { run } = setup({ url, worker: { secrets: ["ADMIN_TOKEN"] } });
      const { status, out } = run([], { CONTEXT_EDGE_ADMIN_TOKEN: "" });
      expect(out).toContain("Smoke test: not run");
      expect(out).toContain("CONTEXT_EDGE_ADMIN_TOKEN=<token> npm run deploy");
      expect(status).toBe(0);
    });
  });
}
