import { readdirSync, readFileSync } from "node:fs";
import { Tiktoken } from "js-tiktoken/lite";
import cl100kBase from "js-tiktoken/ranks/cl100k_base";
import o200kBase from "js-tiktoken/ranks/o200k_base";
import { describe, expect, it } from "vitest";
import { TokenTable } from "../../src/shared/token-table";
import { counterFromTable } from "../../src/shared/tokens";
import { TOKEN_ENCODINGS, type TokenEncoding } from "../../src/token-encodings";

// The prebuilt tables (assets/tokenizer, from scripts/build-token-tables.mjs) and our encoder must give
// exactly js-tiktoken's tokens. Runs in Node because it imports js-tiktoken's rank files directly.

function tableBytes(encoding: TokenEncoding): ArrayBuffer {
  const file = readFileSync(`assets/tokenizer/${encoding}.bin`);
  return file.buffer.slice(file.byteOffset, file.byteOffset + file.byteLength) as ArrayBuffer;
}

const RANK_FILES = { o200k_base: o200kBase, cl100k_base: cl100kBase };
const references = new Map<TokenEncoding, Tiktoken>();

/** js-tiktoken itself (built once per encoding: it takes about a second). */
function reference(encoding: TokenEncoding): Tiktoken {
  if (!references.has(encoding)) references.set(encoding, new Tiktoken(RANK_FILES[encoding]));
  return references.get(encoding)!;
}

/** Deterministic pseudo-random numbers (mulberry32), so a failure reproduces. */
function random(seed: number): () => number {
  return () => {
    seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const ALPHABET = [
  ..."abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789",
  ..." \t\n\r.,;:!?'\"()[]{}<>|/\\-_=+*&^%$#@~`",
  ..."éüßçñøÅ東京タワー我喜欢猫안녕하세요한국어Привет мирمرحباनमस्ते",
  "👋🏽",
  "👨‍👩‍👧",
  "🇯🇵",
  "❤️",
  "\u0301",
  "\u00a0",
  "\u200b",
  "\u3000",
  "\ud800",
  "\udfff",
];

function randomText(seed: number, length: number): string {
  const next = random(seed);
  let text = "";
  while (text.length < length) {
    const r = next();
    // Runs of one kind (spaces, digits, words) as well as single symbols.
    if (r < 0.1) text += " ".repeat(1 + Math.floor(next() * 40));
    else if (r < 0.15) text += String(Math.floor(next() * 1e9));
    else if (r < 0.2)
      text += String.fromCodePoint(Math.floor(next() * 0x2ffff)); // any plane 0-2 code point, lone surrogates too
    else text += ALPHABET[Math.floor(next() * ALPHABET.length)];
  }
  return text;
}

function randomWord(seed: number, letters: string, length: number): string {
  const next = random(seed);
  const alphabet = [...letters];
  return Array.from({ length }, () => alphabet[Math.floor(next() * alphabet.length)]).join("");
}

const CORPUS: Record<string, string> = {
  empty: "",
  english:
    "The quick brown fox jumps over the lazy dog. I'll say it's DON'T, they've, we'd; Mr. O'Neil's 3.14159 and 1,000,000.",
  chinese: "我喜欢在东京塔附近散步。人工智能正在改变世界，长期记忆让智能体更有用。",
  japanese: "東京タワーは赤い。ひらがなとカタカナ、そして漢字が混ざった文章です。",
  korean: "안녕하세요. 한국어 문장은 띄어쓰기를 합니다. 서울특별시 강남구",
  mixedScripts: "Привет, мир! مرحبا بالعالم नमस्ते दुनिया Ελληνικά עברית ไทย",
  emoji: "👋🏽 hello 👨‍👩‍👧‍👦 family 🇯🇵🇰🇷 flags ❤️‍🔥 🙂🙃 e\u0301 combining",
  code: 'export function add(a: number, b: number): number {\n\treturn a + b; // sum\n}\r\n\r\nconst x = { "k": [1, 2, 3] };\n    if (x) {\n        print(f"{x!r}")\n',
  whitespaceRuns: [
    "",
    " ",
    "  ",
    "\t\t",
    "\n\n\n",
    " \n \n",
    "\r\n\r\n",
    " ".repeat(17),
    `${" ".repeat(300)}x`,
    `a${" ".repeat(64)}\n${"\t".repeat(9)}b  `,
  ].join("|"),
  specialTokenText:
    "<|endoftext|> then <|endofprompt|> and <|fim_prefix|>x<|fim_middle|>y<|fim_suffix|> <|im_start|>user<|im_end|> <|endoftext|><|endoftext|>",
  longWord: "a".repeat(1000) + "🙂".repeat(200) + "東".repeat(300),
  // Single pieces of thousands of bytes take the heap merge (bpe-encoder LONG_PIECE_BYTES).
  longRandomWord:
    randomWord(3, "abcdefghijklmnopqrstuvwxyz", 2500) +
    " " +
    randomWord(4, "가나다라마바사아자차카타파하한국어", 700) +
    " " +
    randomWord(5, "ab", 3000),
  random: randomText(1, 60_000),
  randomSecond: randomText(2, 20_000),
  readme: [
    "README.md",
    ...readdirSync("docs")
      .sort()
      .map((name) => `docs/${name}`),
  ]
    .map((path) => readFileSync(path, "utf8"))
    .join("\n"),
  sources: readdirSync("src/core", { recursive: true, encoding: "utf8" })
    .filter((name) => name.endsWith(".ts"))
    .sort()
    .map((name) => readFileSync(`src/core/${name}`, "utf8"))
    .join("\n"),
};

describe.each(TOKEN_ENCODINGS)("%s counts exactly as js-tiktoken", { timeout: 60_000 }, (encoding) => {
  const counter = counterFromTable(encoding, tableBytes(encoding));

  it("holds every token of js-tiktoken's rank file, found by its bytes", () => {
    const expected = reference(encoding);
    const table = new TokenTable(tableBytes(encoding));
    const ranks = (expected as unknown as { textMap: Map<number, Uint8Array> }).textMap; // its rank -> bytes map
    expect(ranks.size).toBeGreaterThan(100_000);
    const wrong: number[] = [];
    for (const [rank, bytes] of ranks) {
      const ours = table.bytesOf(rank);
      if (!ours || Buffer.compare(ours, bytes) !== 0 || table.rankOf(bytes, 0, bytes.length) !== rank) wrong.push(rank);
    }
    expect(wrong).toEqual([]);
  });

  it.each(Object.keys(CORPUS))("on %s text", (name) => {
    const expected = reference(encoding);
    const text = CORPUS[name]!;
    const tokens = expected.encode(text, [], []); // special-token text as plain text
    expect(counter.encode(text)).toEqual(tokens);
    expect(counter.count(text)).toBe(tokens.length);
    expect(counter.decode(tokens)).toBe(expected.decode(tokens));
    // Chunking and truncation decode slices of a token list; a slice may split a character.
    for (let start = 0; start < tokens.length; start += 97) {
      const slice = tokens.slice(start, start + 50);
      expect(counter.decode(slice)).toBe(expected.decode(slice));
    }
  });
});
