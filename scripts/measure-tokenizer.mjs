#!/usr/bin/env node
// `node scripts/measure-tokenizer.mjs [runs]`: load time and memory of the tokenizer, js-tiktoken (the
// previous implementation) against the prebuilt table (src/shared/tokens.ts), each in a fresh Node process,
// median of `runs` (default 5). load = rank data read + tokenizer built + first count; heap = V8 heap
// retained after a full GC ("before GC" includes the garbage of building it); +buffers also counts ArrayBuffers (the table itself), all of which a Worker
// isolate's 128 MB must hold. warm = counting README.md once the tokenizer is loaded (median of 5).
import { spawnSync } from "node:child_process";

const VARIANTS = ["js-tiktoken", "table"];
const ENCODINGS = ["o200k_base", "cl100k_base"];

if (process.argv[2] === "--child") {
  await measureOnce(process.argv[3], process.argv[4]);
} else {
  const runs = Number(process.argv[2] ?? 5);
  console.log(`tokenizer in Node ${process.version}, median of ${runs} fresh processes`);
  console.log("variant      encoding      load ms   heap before GC MB   heap MB   +buffers MB   warm count ms");
  for (const encoding of ENCODINGS) {
    for (const variant of VARIANTS) {
      const samples = [];
      for (let i = 0; i < runs; i++) {
        const child = spawnSync(
          process.execPath,
          ["--expose-gc", "--import", "tsx", import.meta.filename, "--child", variant, encoding],
          { encoding: "utf8" },
        );
        if (child.status !== 0) throw new Error(child.stderr);
        samples.push(JSON.parse(child.stdout));
      }
      const median = (key) => samples.map((s) => s[key]).sort((a, b) => a - b)[Math.floor(runs / 2)];
      const cells = [
        median("loadMs").toFixed(0),
        median("beforeGcMB").toFixed(1),
        median("heapMB").toFixed(1),
        median("totalMB").toFixed(1),
        median("warmMs").toFixed(1),
      ];
      const widths = [7, 19, 9, 13, 15];
      console.log(
        `${variant.padEnd(12)} ${encoding.padEnd(13)} ${cells.map((c, i) => c.padStart(widths[i])).join(" ")}`,
      );
    }
  }
}

async function measureOnce(variant, encoding) {
  const { readFileSync } = await import("node:fs");
  // Code is imported before timing: only the rank data and building the tokenizer are measured.
  const { Tiktoken } = await import("js-tiktoken/lite");
  const { counterFromTable } = await import("../src/shared/tokens.ts");
  const readme = readFileSync(new URL("../README.md", import.meta.url), "utf8");
  globalThis.gc();
  const before = process.memoryUsage();
  const started = performance.now();
  let count;
  if (variant === "js-tiktoken") {
    const { default: ranks } = await import(`js-tiktoken/ranks/${encoding}`);
    const tiktoken = new Tiktoken(ranks);
    count = (text) => tiktoken.encode(text, [], []).length;
  } else {
    const file = readFileSync(new URL(`../assets/tokenizer/${encoding}.bin`, import.meta.url));
    // A file this large has its own ArrayBuffer, as response.arrayBuffer() gives the Worker.
    const whole = file.byteOffset === 0 && file.byteLength === file.buffer.byteLength;
    const counter = counterFromTable(
      encoding,
      whole ? file.buffer : file.buffer.slice(file.byteOffset, file.byteOffset + file.byteLength),
    );
    count = (text) => counter.count(text);
  }
  count("hello world");
  const loadMs = performance.now() - started;
  const beforeGcMB = (process.memoryUsage().heapUsed - before.heapUsed) / 2 ** 20;
  globalThis.gc();
  const after = process.memoryUsage();
  const warm = [];
  for (let i = 0; i < 5; i++) {
    const warmStarted = performance.now();
    count(readme);
    warm.push(performance.now() - warmStarted);
  }
  const warmMs = warm.sort((a, b) => a - b)[2];
  const heapMB = (after.heapUsed - before.heapUsed) / 2 ** 20;
  const totalMB = heapMB + (after.arrayBuffers - before.arrayBuffers) / 2 ** 20;
  console.log(JSON.stringify({ loadMs, beforeGcMB, heapMB, totalMB, warmMs }));
}
