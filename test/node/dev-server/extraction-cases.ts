import { describe, expect, it } from "vitest";
import { devSecrets } from "../../fixtures/dev-server";

// Memory extraction on the newcomer's server: `npm run dev` runs it offline (LLM=local) with no setting to make.

async function tool(url: string, name: string, args: Record<string, unknown>): Promise<any> {
  const response = await fetch(`${url}/jsonrpc`, {
    method: "POST",
    headers: { "content-type": "application/json", authorization: `Bearer ${devSecrets().key}` },
    body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/call", params: { name, arguments: args } }),
  });
  const body = (await response.json()) as { result?: unknown; error?: unknown };
  if (body.error) throw new Error(`${name}: ${JSON.stringify(body.error)}`);
  return body.result;
}

/** The extraction cases, against the dev server at `url()` (test/node/dev-server.test.ts starts it). */
export function extractionCases(url: () => string) {
  describe("memory extraction under npm run dev", () => {
    it("is on with the offline model, and a conversation becomes a profile", { timeout: 60_000 }, async () => {
      const project = `learn-${Date.now().toString(36)}`;
      expect(await tool(url(), "memory_settings", { project_id: project })).toMatchObject({
        extracting: true,
        model: "local-rules",
      });
      await tool(url(), "memory_ingest", {
        conversation_id: `${project}-c`,
        project_id: project,
        messages: [{ role: "user", speaker: "Noor", content: "I work as a pharmacist in Leeds." }],
      });
      let profile: any;
      for (let i = 0; i < 100 && !profile; i++) {
        const subjects = (await tool(url(), "memory_profile", { project_id: project })).subjects;
        if (subjects.length > 0)
          profile = await tool(url(), "memory_profile", { project_id: project, subject: "Noor" });
        else await new Promise((resolve) => setTimeout(resolve, 200));
      }
      expect(profile.facts.map((f: any) => f.text)).toContain("Noor works as a pharmacist in Leeds.");
    });
  });
}
