import { readFileSync, writeFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { TOOLS } from "../../src/tools/index";
import { renderToolTable, TABLE_END, TABLE_START } from "../../src/tools/reference";

// Runs in Node (not workerd) because it reads and, with UPDATE_README=1 (`npm run docs`), writes docs/tools.md.
const TOOLS_DOC = "docs/tools.md";

describe("docs/tools.md tool reference", () => {
  it("matches the registry", () => {
    const readme = readFileSync(TOOLS_DOC, "utf8");
    const start = readme.indexOf(TABLE_START);
    const end = readme.indexOf(TABLE_END);
    expect(start, `${TOOLS_DOC} lacks the tool-table markers`).toBeGreaterThan(-1);
    const current = readme.slice(start, end + TABLE_END.length);
    const fresh = renderToolTable(TOOLS);
    if (process.env.UPDATE_README === "1" && current !== fresh) {
      writeFileSync(TOOLS_DOC, readme.replace(current, fresh));
      return;
    }
    expect(current, `${TOOLS_DOC}'s tool table is stale: run \`npm run docs\``).toBe(fresh);
  });
});
