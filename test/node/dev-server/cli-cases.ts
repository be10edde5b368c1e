import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { devSecrets, freePort } from "../../fixtures/dev-server";

// The operator CLI (`npx context-edge`, bin/context-edge.mjs) as an operator runs it, against `npm run dev`:
// tenants, keys, export and import with progress and counts, a move, and the exit codes a script branches on.

const files = mkdtempSync(join(tmpdir(), "cli-"));
const server = { url: "" };

/** The operator CLI's cases, against the dev server at `url()` (test/node/dev-server.test.ts starts it). */
export function cliCases(url: () => string) {
  beforeAll(() => {
    server.url = url();
  });
  afterAll(() => rmSync(files, { recursive: true, force: true }));

  /** The CLI with the dev server's URL and admin token unless the arguments say otherwise. */
  function cli(args: string[], env: Record<string, string> = {}) {
    const run = spawnSync(process.execPath, ["bin/context-edge.mjs", ...args], {
      encoding: "utf8",
      timeout: 120_000,
      env: { ...process.env, CONTEXT_EDGE_URL: server.url, CONTEXT_EDGE_ADMIN_TOKEN: devSecrets().adminToken, ...env },
    });
    return { status: run.status, stdout: run.stdout, stderr: run.stderr };
  }

  const json = <T>(args: string[]): T => {
    const run = cli([...args, "--json"]);
    expect(run.status, run.stderr).toBe(0);
    return JSON.parse(run.stdout) as T;
  };

  describe("context-edge tenants and keys", () => {
    it("creates, lists, shows and deletes a tenant; creates, lists and revokes keys, printing the secret once", () => {
      const tenant = json<{ tenant_id: string; shard: string }>(["tenants", "create", "CLI Co", "--shard", "SHARD_1"]);
      expect(tenant.shard).toBe("SHARD_1");
      // The dev server keeps vectors in its local index: naming a Vectorize index is refused, and says why.
      const misplaced = cli(["tenants", "create", "CLI Vectors", "--vector-index", "VECTORIZE"]);
      expect(misplaced.status).toBe(1);
      expect(misplaced.stderr).toContain("local index");
      expect(cli(["tenants", "list"]).stdout).toContain(`${tenant.tenant_id}\tSHARD_1\tCLI Co`);
      expect(json<{ name: string }>(["tenants", "show", tenant.tenant_id]).name).toBe("CLI Co");

      const created = cli([
        "keys",
        "create",
        tenant.tenant_id,
        "--name",
        "agent",
        "--scopes",
        "read,write",
        "--projects",
        "alpha,beta",
      ]);
      expect(created.status).toBe(0);
      const [secret, about] = created.stdout.trim().split("\n");
      expect(secret).toMatch(/^ce_/);
      expect(about).toMatch(/scopes read,write; projects alpha,beta; shown only once/);
      const keys = json<{ key_id: string; name: string; projects: string[] }[]>(["keys", "list", tenant.tenant_id]);
      expect(keys.map((k) => k.name)).toContain("agent");
      expect(cli(["keys", "list", tenant.tenant_id]).stdout).not.toContain(secret!);
      const agent = keys.find((k) => k.name === "agent")!;
      expect(cli(["keys", "revoke", agent.key_id]).stdout).toContain(`revoked ${agent.key_id}`);
      expect(
        json<{ key_id: string; revoked_at: string | null }[]>(["keys", "list", tenant.tenant_id]).find(
          (k) => k.key_id === agent.key_id,
        )!.revoked_at,
      ).not.toBeNull();

      const careful = cli(["tenants", "delete", tenant.tenant_id]);
      expect(careful.status).toBe(2);
      expect(careful.stderr).toContain("add --yes");
      expect(cli(["tenants", "delete", tenant.tenant_id, "--yes"]).status).toBe(0);
    });
  });

  describe("context-edge tenants quotas", () => {
    it("shows a tenant's quotas with its usage, sets, lifts and resets one, and names a bad value with exit 2", () => {
      const tenant = json<{ tenant_id: string }>(["tenants", "create", "Quota Co"]);
      const shown = cli(["tenants", "quotas", tenant.tenant_id]);
      expect(shown.status, shown.stderr).toBe(0);
      expect(shown.stdout).toMatch(/^max_items\s+1,000,000\s+\(uses 0\)$/m);
      type Quotas = Record<string, { limit: number | null; usage: number }>;
      const set = json<Quotas>([
        "tenants",
        "quotas",
        tenant.tenant_id,
        "--max-items",
        "500",
        "--max-pending-jobs",
        "unlimited",
      ]);
      expect(set.max_items).toEqual({ limit: 500, usage: 0 });
      expect(set.max_pending_jobs!.limit).toBeNull();
      expect(cli(["tenants", "quotas", tenant.tenant_id, "--max-pending-jobs", "unlimited"]).stdout).toMatch(
        /^max_pending_jobs\s+unlimited\s+\(uses 0\)$/m,
      );
      expect(json<Quotas>(["tenants", "quotas", tenant.tenant_id, "--max-items", "default"]).max_items!.limit).toBe(
        1_000_000,
      );
      const bad = cli(["tenants", "quotas", tenant.tenant_id, "--max-bytes", "lots"]);
      expect(bad.status).toBe(2);
      expect(bad.stderr).toContain(`--max-bytes takes a whole number, "unlimited" or "default", not 'lots'`);
      const refused = cli(["tenants", "quotas", tenant.tenant_id, "--calls-per-minute", "999999"]);
      expect(refused.status).toBe(1); // the server's 400: above the rate-limit binding's limit
      expect(refused.stderr).toContain("calls_per_minute");
    });
  });

  describe("context-edge export and import", () => {
    it("exports with a count, imports into another tenant with progress and a count, and a second import adds nothing", async () => {
      const { key } = devSecrets();
      const source = json<{ tenant_id: string }>(["tenants", "create", "Export source"]);
      const sourceKey = json<{ api_key: string }>([
        "keys",
        "create",
        source.tenant_id,
        "--scopes",
        "read,write",
      ]).api_key;
      const memories = Array.from({ length: 30 }, (_, i) => ({
        content: `Fact ${i}: the archive on shelf ${i} holds letters from ${1900 + i}.`,
      }));
      const stored = await fetch(`${server.url}/jsonrpc`, {
        method: "POST",
        headers: { authorization: `Bearer ${sourceKey}`, "content-type": "application/json" },
        body: JSON.stringify({
          jsonrpc: "2.0",
          id: 1,
          method: "tools/call",
          params: { name: "memory_batch_store", arguments: { memories, namespace: "archive" } },
        }),
      });
      expect(stored.ok).toBe(true);
      expect(key).toBeTruthy();

      const out = join(files, "source.ndjson");
      const exported = cli(["export", source.tenant_id, "--out", out]);
      expect(exported.status, exported.stderr).toBe(0);
      expect(exported.stderr).toMatch(/exported .*: 30 records \(30 item\), [\d.]+ MB to /);
      const lines = readFileSync(out, "utf8").trim().split("\n");
      expect(lines).toHaveLength(31); // the header and 30 items
      expect(JSON.parse(lines[0]!).type).toBe("header");

      const target = json<{ tenant_id: string }>(["tenants", "create", "Import target"]);
      const imported = cli(["import", target.tenant_id, out]);
      expect(imported.status, imported.stderr).toBe(0);
      expect(imported.stderr).toMatch(/importing .*source\.ndjson: \[#{20}\] 100%/);
      expect(imported.stderr).toMatch(/imported into .* \(context-edge\): 30 items/);
      const again = cli(["import", target.tenant_id, out, "--json"]);
      expect(JSON.parse(again.stdout)).toMatchObject({ imported: { items: 0 }, skipped: { items: 30 } });

      const mcp = cli(["import", target.tenant_id, "test/fixtures/mcp-memory.jsonl", "--project", "kg"]);
      expect(mcp.status, mcp.stderr).toBe(0);
      expect(mcp.stderr).toMatch(/\(mcp-memory\): \d+ items/);
    });

    it("refuses a file that is missing, empty or not an export, naming it, with exit 2 (missing, empty) or 1 (the server's check)", () => {
      const target = json<{ tenant_id: string }>(["tenants", "create", "Bad files"]);
      const missing = cli(["import", target.tenant_id, join(files, "nope.ndjson")]);
      expect([missing.status, missing.stderr]).toEqual([2, expect.stringContaining("cannot read")]);
      writeFileSync(join(files, "empty.ndjson"), "");
      const empty = cli(["import", target.tenant_id, join(files, "empty.ndjson")]);
      expect([empty.status, empty.stderr]).toEqual([2, expect.stringContaining("is empty")]);
      writeFileSync(join(files, "bad.ndjson"), '{"type":"item","content":1}\nnot json\n');
      const bad = cli(["import", target.tenant_id, join(files, "bad.ndjson")]);
      expect(bad.status).toBe(1);
      expect(bad.stderr).toMatch(/HTTP 400: .*[Ll]ine/);
    });
  });

  describe("context-edge move and shards", () => {
    it("moves a tenant to the other shard and follows it to done", () => {
      const tenant = json<{ tenant_id: string; shard: string }>(["tenants", "create", "Mover", "--shard", "SHARD_0"]);
      const moved = cli(["move", tenant.tenant_id, "SHARD_1"]);
      expect(moved.status, moved.stderr).toBe(0);
      expect(moved.stdout).toMatch(/moving .* from SHARD_0 to SHARD_1/);
      expect(moved.stdout).toMatch(/done: .* is on SHARD_1/);
      expect(json<{ shard: string }>(["tenants", "show", tenant.tenant_id]).shard).toBe("SHARD_1");
      expect(cli(["shards"]).stdout).toContain("SHARD_1");
    }, 90_000);
  });

  describe("context-edge errors and exit codes", () => {
    it("says what is wrong with the URL, the token or the arguments, with the exit code a script can use", async () => {
      const notUrl = cli(["tenants", "list", "--url", "not a url"]);
      expect([notUrl.status, notUrl.stderr]).toEqual([2, expect.stringContaining("is not a URL")]);
      const down = cli(["tenants", "list", "--url", `http://127.0.0.1:${await freePort()}`]);
      expect([down.status, down.stderr]).toEqual([3, expect.stringContaining("ECONNREFUSED")]);
      const badToken = cli(["tenants", "list", "--token", "wrong"]);
      expect([badToken.status, badToken.stderr]).toEqual([4, expect.stringContaining("admin token was refused")]);
      const noToken = cli(["tenants", "list"], { CONTEXT_EDGE_ADMIN_TOKEN: "", ADMIN_TOKEN: "" });
      expect([noToken.status, noToken.stderr]).toEqual([2, expect.stringContaining("no admin token")]);
      const unknown = cli(["frobnicate"]);
      expect([unknown.status, unknown.stderr]).toEqual([2, expect.stringContaining("unknown command 'frobnicate'")]);
      const missingTenant = cli(["tenants", "show", "tn_nobody"]);
      expect([missingTenant.status, missingTenant.stderr]).toEqual([1, expect.stringContaining("HTTP 404")]);
      expect(cli(["--help"]).stdout).toContain(
        "exit codes: 0 done, 1 refused or failed, 2 bad usage or file, 3 unreachable, 4 token refused",
      );
    });
  });
}
