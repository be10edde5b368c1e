#!/usr/bin/env node
// `node scripts/build-token-tables.mjs`: writes assets/tokenizer/<encoding>.bin from js-tiktoken's own
// rank files, so the Worker loads a table that needs no parsing (typed-array views over the bytes)
// instead of decoding 200k base64 strings into a Map at first use. Rerun after upgrading js-tiktoken;
// test/node/token-counts.test.ts checks the tables still count exactly as js-tiktoken does.
//
// Layout (little-endian, every section 4-byte aligned), read by src/core/token-table.ts:
//   "CETT" | u32 header length | header JSON {format, encoding, patStr, tokenCount, sortedCount, specialTokens}
//   | u32 offsets[tokenCount + 1]: rank r's bytes are bytes[offsets[r], offsets[r + 1]) (empty = no token)
//   | u32 firstByteStart[257]: where the sorted ranks starting with each byte value begin
//   | u32 sorted[sortedCount]: ranks ordered by their bytes | the tokens' bytes, concatenated in rank order
// Offsets and the first-byte index are stored, not derived at load: a cold isolate runs such loops slowly.
import { mkdirSync, writeFileSync } from "node:fs";

const TABLE_FORMAT = 2;
const ENCODINGS = ["o200k_base", "cl100k_base"];
const OUT_DIR = new URL("../assets/tokenizer/", import.meta.url);

const pad4 = (n) => (n + 3) & ~3;

function compareBytes(a, b) {
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) if (a[i] !== b[i]) return a[i] - b[i];
  return a.length - b.length;
}

async function buildTable(encoding) {
  const { default: ranks } = await import(`js-tiktoken/ranks/${encoding}`);
  // Same expansion as js-tiktoken's constructor: "<prefix> <first rank> <base64 token> ...".
  const tokens = [];
  for (const line of ranks.bpe_ranks.split("\n").filter(Boolean)) {
    const [, offset, ...encoded] = line.split(" ");
    encoded.forEach((token, i) => (tokens[Number(offset) + i] = Buffer.from(token, "base64")));
  }
  const tokenCount = tokens.length;
  const offsets = new Uint32Array(tokenCount + 1);
  for (let rank = 0; rank < tokenCount; rank++) offsets[rank + 1] = offsets[rank] + (tokens[rank]?.length ?? 0);
  const sorted = [...tokens.keys()].filter((rank) => tokens[rank]).sort((a, b) => compareBytes(tokens[a], tokens[b]));
  for (let i = 1; i < sorted.length; i++) {
    if (compareBytes(tokens[sorted[i - 1]], tokens[sorted[i]]) === 0)
      throw new Error(`${encoding}: two ranks share bytes`);
  }
  const firstByteStart = new Uint32Array(257);
  for (let byte = 0, position = 0; byte <= 256; byte++) {
    firstByteStart[byte] = position;
    while (position < sorted.length && tokens[sorted[position]][0] === byte) position++;
  }
  const bytes = new Uint8Array(offsets[tokenCount]);
  for (const [rank, token] of tokens.entries()) if (token) bytes.set(token, offsets[rank]);

  const headerJson = JSON.stringify({
    format: TABLE_FORMAT,
    encoding,
    patStr: ranks.pat_str,
    tokenCount,
    sortedCount: sorted.length,
    specialTokens: ranks.special_tokens,
  });
  const header = Buffer.from(headerJson.padEnd(pad4(Buffer.byteLength(headerJson)), " "));
  const prefix = Buffer.alloc(8);
  prefix.write("CETT", 0, "ascii");
  prefix.writeUInt32LE(header.length, 4);
  // Typed arrays are written in the machine's byte order; readers (V8 on x86/ARM) are little-endian.
  if (new Uint8Array(new Uint16Array([1]).buffer)[0] !== 1) throw new Error("build on a little-endian machine");
  const u32 = (array) => Buffer.from(array.buffer, array.byteOffset, array.byteLength);
  return Buffer.concat([prefix, header, u32(offsets), u32(firstByteStart), u32(Uint32Array.from(sorted)), bytes]);
}

mkdirSync(OUT_DIR, { recursive: true });
for (const encoding of ENCODINGS) {
  const table = await buildTable(encoding);
  writeFileSync(new URL(`${encoding}.bin`, OUT_DIR), table);
  console.log(`assets/tokenizer/${encoding}.bin  ${(table.length / 1024).toFixed(0)} KiB`);
}
