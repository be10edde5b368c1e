import { betaMemoryTool } from "@anthropic-ai/sdk/helpers/beta/memory";
import type { BetaMemoryTool20250818Command } from "@anthropic-ai/sdk/resources/beta";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type ContextEdgeMemory, contextEdgeMemory } from "../../../examples/anthropic-memory-tool/memory-backend";
import { devSecrets } from "../../fixtures/dev-server";

// examples/anthropic-memory-tool: Claude's memory tool as the Anthropic SDK runs it (betaMemoryTool's run(), which
// its tool runner calls with each command Claude sends), backed by the dev server. No call reaches Claude.

/** The memory tool example's cases, against the dev server at `url()` (test/node/dev-server.test.ts starts it). */
export function memoryToolCases(url: () => string) {
  let memory: ContextEdgeMemory;
  const namespace = `claude-${Date.now().toString(36)}`;
  beforeAll(async () => {
    memory = await contextEdgeMemory({ url: `${url()}/mcp`, apiKey: devSecrets().key, namespace });
  });
  afterAll(() => memory?.close());

  const run = (command: BetaMemoryTool20250818Command) => betaMemoryTool(memory.handlers).run(command);

  describe("Claude's memory tool backed by Context Edge (examples/anthropic-memory-tool)", () => {
    it("runs each command Claude sends and answers in the tool's words", async () => {
      expect(await run({ command: "view", path: "/memories" })).toContain(
        "Here're the files and directories up to 2 levels deep in /memories",
      );
      expect(
        await run({
          command: "create",
          path: "/memories/customers.md",
          file_text: "# Customers\nAcme Corp: email follow-ups",
        }),
      ).toBe("File created successfully at: /memories/customers.md");
      expect(
        await run({
          command: "str_replace",
          path: "/memories/customers.md",
          old_str: "email",
          new_str: "email (never phone)",
        }),
      ).toContain("The memory file has been edited.");
      expect(
        await run({
          command: "insert",
          path: "/memories/customers.md",
          insert_line: 2,
          insert_text: "Globex: weekly call",
        }),
      ).toBe("The file /memories/customers.md has been edited.");
      expect(
        await run({ command: "rename", old_path: "/memories/customers.md", new_path: "/memories/crm/customers.md" }),
      ).toBe("Successfully renamed /memories/customers.md to /memories/crm/customers.md");
      expect(await run({ command: "view", path: "/memories/crm/customers.md" })).toBe(
        "Here's the content of /memories/crm/customers.md with line numbers:\n     1\t# Customers\n     2\tAcme Corp: email (never phone) follow-ups\n     3\tGlobex: weekly call",
      );
      expect(await run({ command: "delete", path: "/memories/crm" })).toBe("Successfully deleted /memories/crm");
    });

    it("hands Claude the server's error message when a command is refused", async () => {
      await expect(run({ command: "view", path: "/memories/missing.md" })).rejects.toThrow(
        "The path /memories/missing.md does not exist. Please provide a valid path.",
      );
      await expect(run({ command: "create", path: "/memories/../etc/passwd", file_text: "x" })).rejects.toThrow(
        "would escape /memories directory",
      );
    });
  });
}
