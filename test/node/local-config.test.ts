import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { experimental_readRawConfig } from "wrangler";
import { withoutRemoteBindings, writeLocalConfig } from "../../scripts/local-config.mjs";

// Local runs (`npm run dev`, the tests) use wrangler.local.toml: wrangler.toml less the bindings only production
// calls, so wrangler does not warn about Workers AI charges or Vectorize's lack of local support, and less the tail
// consumer that records the platform's CPU time (local workerd reports 0; the test pool cannot run it).

const read = (config: string) => experimental_readRawConfig({ config }).rawConfig;

describe("the local wrangler configuration", () => {
  it("is wrangler.toml without the AI and Vectorize bindings and the tail consumer, every other setting the same", () => {
    const { ai, vectorize, tail_consumers, ...rest } = read("wrangler.toml");
    expect(ai).toEqual({ binding: "AI" });
    expect(tail_consumers).toEqual([{ service: "context-edge" }]);
    expect(vectorize).not.toHaveLength(0);
    expect(read(writeLocalConfig())).toEqual(rest);
  });

  it("keeps every line of wrangler.toml in order but those of its [ai] and [[vectorize]] tables and tail_consumers", () => {
    const source = readFileSync("wrangler.toml", "utf8").split("\n");
    const [header, ...local] = readFileSync(writeLocalConfig(), "utf8").split("\n");
    expect(header).toMatch(/^# Written by scripts\/local-config\.mjs from wrangler\.toml/);
    const droppedFrom = new Set<string>();
    let table = "";
    let at = 0;
    for (const line of source) {
      table = /^\s*\[\[?\s*([\w.-]+)\s*\]/.exec(line)?.[1] ?? table;
      if (line === local[at]) at++;
      else droppedFrom.add(table);
    }
    expect(at).toBe(local.length);
    // "": the top level, where tail_consumers is.
    expect([...droppedFrom].sort()).toEqual(["", "ai", "vectorize"]);
  });

  it("drops a table up to the comments that introduce the next one", () => {
    const toml = [
      'name = "w"',
      'tail_consumers = [{ service = "w" }]',
      "# the index",
      "[[vectorize]]",
      'binding = "VECTORIZE"',
      "# inside the block",
      'index_name = "i"',
      "",
      "# Workers AI",
      "[ai]",
      'binding = "AI"',
      "",
      "# the cache",
      "[[kv_namespaces]]",
      'binding = "CACHE"',
      "[[vectorize]]",
      'binding = "VECTORIZE_1"',
      "",
    ].join("\n");
    expect(withoutRemoteBindings(toml)).toBe(
      [
        'name = "w"',
        "# the index",
        "",
        "# Workers AI",
        "",
        "# the cache",
        "[[kv_namespaces]]",
        'binding = "CACHE"',
        "",
      ].join("\n"),
    );
  });
});
