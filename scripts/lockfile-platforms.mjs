#!/usr/bin/env node
// The npm registry this project is built from carries workerd only for Linux, so `npm install` leaves
// workerd's darwin/windows optional packages out of package-lock.json and `npm ci` then refuses the
// lockfile. This adds those platform-gated entries (npm skips them on Linux without fetching them).
// Run after `npm install` changes the lockfile: `node scripts/lockfile-platforms.mjs`.
import { readFileSync, writeFileSync } from "node:fs";

const PLATFORMS = [
  ["darwin-64", "darwin", "x64"],
  ["darwin-arm64", "darwin", "arm64"],
  ["windows-64", "win32", "x64"],
];
const lock = JSON.parse(readFileSync("package-lock.json", "utf8"));
let added = 0;
for (const [path, entry] of Object.entries(lock.packages)) {
  if (!path.endsWith("node_modules/workerd") || !entry.optionalDependencies) continue;
  const base = path.slice(0, -"workerd".length);
  for (const [suffix, os, cpu] of PLATFORMS) {
    const name = `@cloudflare/workerd-${suffix}`;
    const version = entry.optionalDependencies[name];
    const key = `${base}${name}`;
    if (!version || lock.packages[key]) continue;
    lock.packages[key] = {
      version,
      cpu: [cpu],
      dev: entry.dev,
      license: "Apache-2.0",
      optional: true,
      os: [os],
      engines: { node: ">=16" },
    };
    added++;
  }
}
lock.packages = Object.fromEntries(
  Object.entries(lock.packages).sort(([a], [b]) => (a === "" ? -1 : b === "" ? 1 : a.localeCompare(b))),
);
writeFileSync("package-lock.json", `${JSON.stringify(lock, null, 2)}\n`);
console.log(`added ${added} platform entries`);
