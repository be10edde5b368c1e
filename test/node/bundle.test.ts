import { execFileSync } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { gzipSync } from "node:zlib";
import { afterAll, describe, expect, it } from "vitest";

// What `wrangler deploy` would upload must fit the Workers limits (developers.cloudflare.com/workers/platform/limits):
// the Worker's compressed size (gzip) at most 3 MiB on the Free plan (10 MiB on Paid), start-up CPU under 1 s,
// and static assets at most 25 MiB a file and 20,000 files (Free). Built offline with `wrangler deploy --dry-run
// --outdir`; start-up profiled with `wrangler check startup` in local workerd (a different CPU than Cloudflare's,
// so the bound asserted is half the limit).

const MIB = 1024 * 1024;
const FREE_PLAN_COMPRESSED = 3 * MIB;
const STARTUP_LIMIT_MS = 1000;
const ASSET_FILE_LIMIT = 25 * MIB;
const ASSET_COUNT_LIMIT = 20_000;
const out = mkdtempSync(join(tmpdir(), "bundle-"));
const wrangler = (...args: string[]) =>
  execFileSync(process.execPath, ["node_modules/wrangler/bin/wrangler.js", ...args], {
    encoding: "utf8",
    env: { ...process.env, CI: "true" },
    stdio: ["ignore", "pipe", "pipe"],
  });

afterAll(() => rmSync(out, { recursive: true, force: true }));

/** Every file under a directory, with its size. */
function files(dir: string): { path: string; bytes: number }[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    return entry.isDirectory() ? files(path) : [{ path, bytes: statSync(path).size }];
  });
}

describe("the deployable Worker fits the platform's limits", () => {
  it("compresses to under the Free plan's 3 MiB", { timeout: 120_000 }, () => {
    wrangler("deploy", "--dry-run", "--outdir", join(out, "dist"));
    const bundle = readFileSync(join(out, "dist", "index.js"));
    const compressed = gzipSync(bundle).length;
    console.log(
      `Worker bundle: ${(bundle.length / 1024).toFixed(1)} KiB, gzip ${(compressed / 1024).toFixed(1)} KiB (${((100 * compressed) / FREE_PLAN_COMPRESSED).toFixed(1)}% of the Free plan's 3 MiB)`,
    );
    expect(bundle.length).toBeGreaterThan(100 * 1024); // the app, not an empty stub
    expect(compressed).toBeLessThan(FREE_PLAN_COMPRESSED);
  });

  it("starts in well under the 1 s of start-up CPU", { timeout: 120_000 }, () => {
    const profilePath = join(out, "startup.cpuprofile");
    wrangler("check", "startup", "--outfile", profilePath);
    const profile = JSON.parse(readFileSync(profilePath, "utf8")) as {
      nodes: { id: number; callFrame: { functionName: string } }[];
      samples: number[];
      timeDeltas: number[];
    };
    const names = new Map(profile.nodes.map((n) => [n.id, n.callFrame.functionName]));
    // Sampled time not spent idle (the profile's µs deltas), as `wrangler check startup` reports "Active".
    const activeMs =
      profile.samples.reduce((sum, id, i) => sum + (names.get(id) === "(idle)" ? 0 : profile.timeDeltas[i]!), 0) / 1000;
    console.log(`Start-up CPU (local workerd profile): ${activeMs.toFixed(1)} ms active of the 1,000 ms limit`);
    expect(profile.samples.length).toBeGreaterThan(0);
    expect(activeMs).toBeLessThan(STARTUP_LIMIT_MS / 2);
  });

  it("uploads static assets within the per-file and file-count limits", () => {
    const assets = files("assets");
    const largest = assets.reduce((a, b) => (b.bytes > a.bytes ? b : a));
    console.log(
      `Static assets: ${assets.length} files, largest ${largest.path} ${(largest.bytes / MIB).toFixed(2)} MiB`,
    );
    expect(assets.map((a) => a.path)).toContain(join("assets", "tokenizer", "o200k_base.bin"));
    expect(assets.length).toBeLessThan(ASSET_COUNT_LIMIT);
    expect(largest.bytes).toBeLessThan(ASSET_FILE_LIMIT);
  });
});
