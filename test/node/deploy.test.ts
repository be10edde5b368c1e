import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { removeAccounts, setup } from "../fixtures/fake-account";

// `npm run deploy` against a fake account (test/fixtures/fake-wrangler.mjs: wrangler's commands, output shapes
// and errors over a JSON file), in a copy of the repository's wrangler.toml and .dev.vars.example. The real
// Cloudflare API is not reachable here; the smoke step against a served Worker is in smoke.test.ts.

afterAll(removeAccounts);

/** What wrangler.toml binds, read with wrangler's own reader. */
async function bound() {
  const { experimental_readRawConfig } = await import("wrangler");
  const { rawConfig } = experimental_readRawConfig({ config: "wrangler.toml" });
  return rawConfig;
}

describe("npm run deploy -- --dry-run", () => {
  it("prints, offline, a plan that holds every resource wrangler.toml binds and the secret .dev.vars.example names", async () => {
    const { run, state } = setup({ loggedIn: false });
    const { status, out } = run(["--dry-run"]);
    expect(status).toBe(0);
    const config = await bound();
    for (const d of config.d1_databases ?? [])
      expect(out).toMatch(new RegExp(`D1 database\\s+${d.database_name}\\s+\\(binding ${d.binding};`));
    for (const k of config.kv_namespaces ?? []) expect(out).toContain(`(binding ${k.binding})`);
    expect(out).toContain("R2 bucket       context-edge-documents  (binding DOCUMENTS)");
    for (const v of config.vectorize ?? [])
      expect(out).toContain(
        `Vectorize index ${v.index_name}  (binding ${v.binding}; ${config.vars!.EMBEDDING_DIMENSIONS} dimensions, cosine)`,
      );
    expect(out).toContain("metadata index project (string)");
    const queues = new Set([
      ...(config.queues?.producers ?? []).map((p: { queue: string }) => p.queue),
      ...(config.queues?.consumers ?? []).flatMap((c: { queue: string; dead_letter_queue?: string }) =>
        [c.queue, c.dead_letter_queue ?? []].flat(),
      ),
    ]);
    expect(queues.size).toBeGreaterThanOrEqual(3);
    for (const q of queues) expect(out).toMatch(new RegExp(`Queue\\s+${q}$`, "m"));
    expect(out).toMatch(/Secret\s+ADMIN_TOKEN/);
    expect(state().calls).toEqual([]); // no wrangler command ran
  });
});

describe("npm run deploy against an account", () => {
  it("refuses when not logged in, says how to log in, and creates nothing", () => {
    const { run, state } = setup({ loggedIn: false });
    const { status, out } = run(["--skip-smoke"]);
    expect(status).toBe(1);
    expect(out).toContain("Not logged in to Cloudflare");
    expect(out).toContain("npx wrangler login");
    expect(out).toContain("What exists so far: nothing");
    expect(state().calls).toEqual([["whoami", "--json"]]);
  });

  it("creates every resource on a fresh account, migrates, generates ADMIN_TOKEN once, deploys; a second run creates nothing", () => {
    const { run, state, toml } = setup();
    const first = run(["--skip-smoke"]);
    expect(first.status, first.out).toBe(0);
    const account = state();
    expect(Object.keys(account.d1).sort()).toEqual([
      "context-edge-control",
      "context-edge-shard-0",
      "context-edge-shard-1",
    ]);
    expect(account.vectorize["context-edge"]).toEqual({
      dimensions: 768,
      metric: "cosine",
      metadata: [{ propertyName: "project", indexType: "string" }],
    });
    expect(account.queues.sort()).toEqual(["context-edge-jobs", "context-edge-jobs-dlq", "context-edge-usage"]);
    expect(account.kv.map((k) => k.title).sort()).toEqual(["context-edge-cache", "context-edge-oauth-kv"]);
    expect(account.r2).toEqual(["context-edge-documents"]);
    expect(account.migrated).toEqual(["CONTROL", "SHARD_0", "SHARD_1"]);
    expect(account.identities).toEqual({ SHARD_0: 0, SHARD_1: 1 });
    expect(account.worker).toEqual({ secrets: ["ADMIN_TOKEN"] });
    // The vector index's metadata index exists before anything could upsert: created before the deploy.
    const order = account.calls.map((c) => c.slice(0, 2).join(" "));
    const deployedAt = account.calls.findIndex((c) => c[0] === "deploy");
    expect(deployedAt).toBeGreaterThan(0);
    expect(order.indexOf("vectorize create-metadata-index")).toBeLessThan(deployedAt);
    expect(account.calls[deployedAt]).toContain("--secrets-file");
    const tokens = first.out.match(/\b[0-9a-f]{64}\b/g) ?? [];
    expect(tokens).toHaveLength(1); // printed once
    expect(first.out).toContain("MCP URL: https://context-edge.dev-account.workers.dev/mcp");
    expect(first.out).toContain("/admin/tenants/<tenant_id>/keys");
    for (const k of account.kv) expect(toml()).toContain(`id = "${k.id}"`);

    const configAfterFirst = toml();
    const second = run(["--skip-smoke"]);
    expect(second.status, second.out).toBe(0);
    expect(second.out).toContain("Nothing to create: all 11 resources exist.");
    expect(second.out).not.toMatch(/\b[0-9a-f]{64}\b/); // the token is not generated again
    expect(second.out).toContain("(its secrets are kept)");
    const creations = state()
      .calls.slice(account.calls.length)
      .filter((c) => c.includes("create") || c.includes("create-metadata-index"));
    expect(creations).toEqual([]);
    expect(toml()).toBe(configAfterFirst);
  });

  it("stops at a missing permission naming the resource, what to do and what exists so far; the next run goes on from there", () => {
    const { run, state, setState } = setup({
      fail: { "queues create": "Authentication error [code: 10000]: this token may not edit Queues" },
    });
    const broken = run(["--skip-smoke"]);
    expect(broken.status).toBe(1);
    expect(broken.out).toContain("Could not create queue context-edge-jobs.");
    expect(broken.out).toContain("Authentication error [code: 10000]");
    expect(broken.out).toContain("may edit Queues");
    expect(broken.out).toMatch(
      /What exists so far: .*D1 database context-edge-control \(created now\).*Vectorize index context-edge \(created now\)/,
    );
    expect(state().worker).toBeNull(); // nothing deployed half-configured

    setState({ fail: {} });
    const resumed = run(["--skip-smoke"]);
    expect(resumed.status, resumed.out).toBe(0);
    expect(resumed.out).toMatch(/exists\s+D1 database context-edge-shard-1/);
    expect(resumed.out).toMatch(/created\s+queue context-edge-jobs/);
  });

  it("stops, without touching the secret, when the Worker's secrets cannot be read for another reason than its absence", () => {
    const { run, state } = setup({
      worker: { secrets: ["ADMIN_TOKEN"] },
      fail: { "secret list": "Authentication error [code: 10000]: this token may not read Workers scripts" },
    });
    const { status, out } = run(["--skip-smoke"]);
    expect(status).toBe(1);
    expect(out).toContain("Could not list the Worker's secrets.");
    expect(out).not.toMatch(/\b[0-9a-f]{64}\b/);
    expect(state().calls.some((c) => c[0] === "deploy")).toBe(false);
  });

  it("refuses a Vectorize index of other dimensions, naming both and the setting to change", () => {
    const { run, state } = setup({
      vectorize: { "context-edge": { dimensions: 384, metric: "cosine", metadata: [] } },
    });
    const { status, out } = run(["--skip-smoke"]);
    expect(status).toBe(1);
    expect(out).toContain(
      "Vectorize index context-edge exists with 384 dimensions (cosine); this deployment embeds with 768 (cosine).",
    );
    expect(out).toContain("EMBEDDING_DIMENSIONS");
    expect(state().worker).toBeNull();
  });

  it("finds a KV namespace an interrupted run created (by its title) instead of failing on the name", () => {
    const { run, state, toml } = setup({
      kv: [{ id: "0123456789abcdef0123456789abcdef", title: "context-edge-cache" }],
    });
    const { status, out } = run(["--skip-smoke"]);
    expect(status, out).toBe(0);
    expect(out).toMatch(/exists\s+KV namespace context-edge-cache/);
    expect(state().kv).toHaveLength(2);
    expect(toml()).toContain('id = "0123456789abcdef0123456789abcdef"');
  });

  it("creates a second Vectorize index (with its metadata index) and more usage and job queues, added as wrangler.toml says", () => {
    const { run, state, dir, toml } = setup();
    const more = [
      '[[vectorize]]\nbinding = "VECTORIZE_1"\nindex_name = "context-edge-1"',
      '[[queues.producers]]\nbinding = "USAGE_1"\nqueue = "context-edge-usage-1"',
      '[[queues.consumers]]\nqueue = "context-edge-usage-1"\nmax_batch_size = 100\nmax_batch_timeout = 1\nmax_retries = 10\ndead_letter_queue = "context-edge-jobs-dlq"',
      '[[queues.producers]]\nbinding = "JOBS_1"\nqueue = "context-edge-jobs-1"',
      '[[queues.consumers]]\nqueue = "context-edge-jobs-1"\nmax_batch_size = 50\nmax_batch_timeout = 1\nmax_retries = 20\ndead_letter_queue = "context-edge-jobs-dlq"',
    ];
    writeFileSync(join(dir, "wrangler.toml"), `${toml()}\n${more.join("\n\n")}\n`);
    const { status, out } = run(["--skip-smoke"]);
    expect(status, out).toBe(0);
    const account = state();
    expect(account.vectorize["context-edge-1"]).toEqual({
      dimensions: 768,
      metric: "cosine",
      metadata: [{ propertyName: "project", indexType: "string" }],
    });
    expect(account.queues.sort()).toEqual([
      "context-edge-jobs",
      "context-edge-jobs-1",
      "context-edge-jobs-dlq",
      "context-edge-usage",
      "context-edge-usage-1",
    ]);
  });

  it("answers an unknown option with the usage line and exit 2", () => {
    const { run } = setup();
    const { status, out } = run(["--bogus"]);
    expect(status).toBe(2);
    expect(out).toContain("usage: npm run deploy");
  });
});
