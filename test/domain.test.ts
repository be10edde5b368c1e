import { describe, expect, it } from "vitest";
import { LocalEmbedder, tokenize } from "../src/adapters/local-embedder";
import { chunkText } from "../src/core/memory/chunking";
import { ftsIndexText, ftsQuery } from "../src/shared/fts-text";
import { dot } from "../src/shared/vector-math";
import { workerTokenCounter } from "./helpers";

describe("FTS5 query building", () => {
  it("quotes every term and ORs them", () => {
    expect(ftsQuery('what did "Melanie" paint?')).toBe('"melanie" OR "paint"');
    expect(ftsQuery("NEAR(a b) AND -c*")).toBe('"near" OR "b" OR "c"');
    expect(ftsQuery("🙂 ((( ")).toBeNull();
    expect(ftsQuery("the of")).toBe('"the" OR "of"'); // only stopwords: keep them
  });

  it("turns CJK runs into phrases of characters, matching the index text", () => {
    expect(ftsQuery("東京タワー")).toBe('"東 京 タ ワ ー"');
    expect(ftsIndexText("我喜欢猫")).toBe(" 我  喜  欢  猫 ");
    expect(ftsQuery("abc東京")).toBe('"abc" OR "東 京"');
  });
});

describe("chunking", () => {
  it("keeps short text whole and packs long text into bounded, overlapping chunks", async () => {
    const counter = await workerTokenCounter("o200k_base");
    expect(chunkText("short", 1, counter)).toEqual([{ content: "short", tokens: 1 }]);
    const sentences = Array.from({ length: 200 }, (_, i) => `Sentence number ${i} says something distinct.`);
    const text = sentences.join(" ");
    const chunks = chunkText(text, counter.count(text), counter, { maxTokens: 100, overlapTokens: 20 });
    expect(chunks.length).toBeGreaterThan(10);
    for (const c of chunks) {
      expect(c.tokens).toBe(counter.count(c.content));
      expect(c.tokens).toBeLessThanOrEqual(100);
    }
    for (const s of sentences) expect(chunks.some((c) => c.content.includes(s))).toBe(true);
    // overlap: each chunk starts with the tail of the previous one
    const firstOfSecond = `${chunks[1]!.content.split(". ")[0]!}.`;
    expect(chunks[0]!.content.includes(firstOfSecond)).toBe(true);
    expect(chunks[0]!.content.startsWith(firstOfSecond)).toBe(false);
  });

  it("tells each chunk of a long text the Markdown headings it sits under, not a '#' inside a code block", async () => {
    const counter = await workerTokenCounter("o200k_base");
    const filler = (topic: string) =>
      Array.from({ length: 12 }, (_, i) => `Step ${i} of the ${topic} is written down here in full.`).join(" ");
    const text = [
      "# Deploy guide",
      `Intro. ${filler("overview")}`,
      "## Rollback",
      filler("revert"),
      "```bash\n# not a heading\nwrangler rollback\n```",
      filler("recovery"),
      "### Database ##",
      filler("restore"),
      "## Monitoring",
      filler("dashboards"),
    ].join("\n\n");
    const chunks = chunkText(text, counter.count(text), counter, { maxTokens: 80, overlapTokens: 10 });
    const under = (words: string) =>
      chunks.find((c) => c.content.includes(words) && !c.content.includes("# "))?.headings;
    expect(chunks[0]!.headings).toBeUndefined(); // it starts with the title itself
    expect(under("the revert")).toEqual(["Deploy guide", "Rollback"]);
    expect(under("the recovery")).toEqual(["Deploy guide", "Rollback"]);
    expect(under("the restore")).toEqual(["Deploy guide", "Rollback", "Database"]);
    expect(under("the dashboards")).toEqual(["Deploy guide", "Monitoring"]);
    // Short text is one chunk, with every heading in it.
    expect(chunkText("# Title\nbody", 4, counter)).toEqual([{ content: "# Title\nbody", tokens: 4 }]);
  });

  it("cuts a sentence longer than the limit at token boundaries", async () => {
    const counter = await workerTokenCounter("o200k_base");
    const text = "word ".repeat(1000).trim();
    const chunks = chunkText(text, counter.count(text), counter, { maxTokens: 100, overlapTokens: 0 });
    expect(chunks.every((c) => c.tokens <= 100)).toBe(true);
    expect(
      chunks
        .map((c) => c.content)
        .join(" ")
        .split(/\s+/).length,
    ).toBe(1000);
  });
});

describe("local embedder", () => {
  it("is deterministic, normalised and lexical", async () => {
    const e = new LocalEmbedder(256);
    const [a, b, c] = await e.embed(["the cat sat on the mat", "the cat sat on the mat", "quarterly revenue grew"]);
    expect(Array.from(a!)).toEqual(Array.from(b!));
    expect(dot(a!, a!)).toBeCloseTo(1, 5);
    const [cats] = await e.embed(["cats sitting on mats"]);
    expect(dot(a!, cats!)).toBeGreaterThan(dot(a!, c!));
    expect(tokenize("Café 東京")).toEqual(["café", "東", "京"]);
  });
});

describe("token counting", () => {
  it("matches js-tiktoken for each encoding, loaded lazily", async () => {
    expect((await workerTokenCounter("o200k_base")).count("hello world")).toBe(2);
    expect((await workerTokenCounter("cl100k_base")).count("hello world")).toBe(2);
    expect((await workerTokenCounter("o200k_base")).count("")).toBe(0);
  });

  it("encodes and decodes through the table the ASSETS binding serves (full equality: test/node/token-counts)", async () => {
    const counter = await workerTokenCounter("o200k_base");
    expect(counter.encode("a <|endoftext|> b")).toEqual([64, 464, 91, 419, 1440, 919, 91, 29, 287]); // js-tiktoken's
    const text = "東京タワー 안녕하세요 👋🏽\n\n  code();";
    expect(counter.decode(counter.encode(text))).toBe(text);
    expect((await workerTokenCounter("cl100k_base")).count(text)).toBeGreaterThan(0);
  });
});
