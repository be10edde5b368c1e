#!/usr/bin/env node
import { mkdirSync, renameSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { gzipSync } from "node:zlib";
// Builds the dashboard's client (dashboard/src) into assets/dashboard/app.js and app.css, which the Worker
// serves at /dashboard/assets/ (src/dashboard/routes.ts). Runs on its own for `wrangler dev` and
// `wrangler deploy` (wrangler.toml [build]) and before `npm test`; the output is not committed.
// `--report` prints what each library adds to the bundle, minified and gzipped.
import { build } from "esbuild";

const OUT_DIR = "assets/dashboard";

const result = await build({
  entryPoints: { app: "dashboard/src/main.tsx" },
  bundle: true,
  minify: true,
  format: "esm",
  target: "es2022",
  jsx: "automatic",
  jsxImportSource: "preact",
  outdir: OUT_DIR,
  write: false,
  metafile: true,
  legalComments: "none",
  logLevel: "warning",
});

mkdirSync(OUT_DIR, { recursive: true });
for (const file of result.outputFiles) {
  // Write then rename: a `wrangler dev` started beside another never serves half a file.
  const temp = join(dirname(file.path), `.${process.pid}.tmp`);
  writeFileSync(temp, file.contents);
  renameSync(temp, file.path);
}

const sizes = result.outputFiles.map(
  (f) => `${f.path.split("/").pop()} ${kb(f.contents.length)} (${kb(gzipSync(f.contents, { level: 9 }).length)} gzip)`,
);
console.log(`dashboard: ${sizes.join(", ")}`);

if (process.argv.includes("--report")) {
  for (const [name, output] of Object.entries(result.metafile.outputs)) {
    const byPackage = new Map();
    for (const [input, { bytesInOutput }] of Object.entries(output.inputs)) {
      const match = input.match(/node_modules\/((?:@[^/]+\/)?[^/]+)/);
      const key = match ? match[1] : "dashboard (own code)";
      byPackage.set(key, (byPackage.get(key) ?? 0) + bytesInOutput);
    }
    console.log(`\n${name}`);
    for (const [pkg, bytes] of [...byPackage].sort((a, b) => b[1] - a[1]))
      console.log(`  ${pkg.padEnd(24)} ${kb(bytes)}`);
  }
}

function kb(bytes) {
  return `${(bytes / 1024).toFixed(1)} KiB`;
}
