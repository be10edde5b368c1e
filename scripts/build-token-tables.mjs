#!/usr/bin/env node
// `node scripts/build-token-tables.mjs`: writes assets/tokenizer/<encoding>.bin from js-tiktoken's own
// rank files, so the Worker loads a table that needs no parsing (typed-array views over the bytes)
// instead of decoding 200k base64 strings into a Map at first use. Rerun after upgrading js-tiktoken;
// test/node/token-counts.test.ts checks the tables still count exactly as js-tiktoken does.
//
// Layout (little-endian, every section 4-byte aligned), read by src/core/token-table.ts:
//   "CETT" | u32 header length | header JSON {format, encoding, patStr, tokenCount, specialTokens}
//   | u8 byte length of each rank's token (0 = no token) | u32 ranks sorted by their bytes
//   | the tokens' bytes, concatenated in rank order
import { mkdirSync, writeFileSync } from "node:fs";

const TABLE_FORMAT = 1;
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
  const lengths = new Uint8Array(pad4(tokenCount));
  let byteTotal = 0;
  for (let rank = 0; rank < tokenCount; rank++) {
    const length = tokens[rank]?.length ?? 0;
    if (length > 255) throw new Error(`${encoding}: token ${rank} is ${length} bytes, more than a u8 holds`);
    lengths[rank] = length;
    byteTotal += length;
  }
  const sorted = [...tokens.keys()].filter((rank) => tokens[rank]).sort((a, b) => compareBytes(tokens[a], tokens[b]));
  for (let i = 1; i < sorted.length; i++) {
    if (compareBytes(tokens[sorted[i - 1]], tokens[sorted[i]]) === 0) throw new Error(`${encoding}: two ranks share bytes`);
  }
  const sortedRanks = new Uint32Array(tokenCount).fill(0xffffffff);
  sortedRanks.set(sorted);
  const bytes = new Uint8Array(byteTotal);
  let at = 0;
  for (const token of tokens) if (token) (bytes.set(token, at), (at += token.length));

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
  const u32 = Buffer.from(sortedRanks.buffer); // little-endian on every platform we build on
  if (new Uint8Array(new Uint16Array([1]).buffer)[0] !== 1) throw new Error("build on a little-endian machine");
  return Buffer.concat([prefix, header, lengths, u32, bytes]);
}

mkdirSync(OUT_DIR, { recursive: true });
for (const encoding of ENCODINGS) {
  const table = await buildTable(encoding);
  writeFileSync(new URL(`${encoding}.bin`, OUT_DIR), table);
  console.log(`assets/tokenizer/${encoding}.bin  ${(table.length / 1024).toFixed(0)} KiB`);
}
