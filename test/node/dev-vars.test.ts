import { describe, expect, it } from "vitest";
import { defaultVarArgs, passedVars } from "../../scripts/dev-vars.mjs";

// `npm run dev -- --var LLM:openai --var LLM_BASE_URL:<url> --var LLM_MODEL:<name>` points the dev server at an
// endpoint: the defaults npm run dev adds (LLM=local) never override the user's own settings.

describe("npm run dev's defaults and the user's --var", () => {
  it("reads both spellings of --var, values with colons included", () => {
    expect(
      passedVars(["--port", "8788", "--var", "LLM:openai", "--var=LLM_BASE_URL:http://localhost:11434/v1", "--var"]),
    ).toEqual({ LLM: "openai", LLM_BASE_URL: "http://localhost:11434/v1" });
  });

  it("a default goes in only where neither .dev.vars nor the command line sets it", () => {
    const defaults = { LLM: "local" };
    expect(defaultVarArgs(defaults, {}, {})).toEqual(["--var", "LLM:local"]);
    expect(defaultVarArgs(defaults, {}, passedVars(["--var", "LLM:openai"]))).toEqual([]);
    expect(defaultVarArgs(defaults, { LLM: "off" }, {})).toEqual([]);
  });
});
