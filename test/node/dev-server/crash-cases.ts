import { describe, expect, it } from "vitest";
import { type DevServer, devSecrets } from "../../fixtures/dev-server";

// A crash mid-ingest, as a user can cause one: writers on the newcomer's server, which is killed with SIGKILL
// (wrangler and workerd at once) and started again on the same state. Every acknowledged write must be there
// exactly once; the jobs the crash took with it (a local queue does not outlive its process) are re-sent by the
// every-minute pass, fired here as if three minutes had passed (miniflare's /cdn-cgi/handler/scheduled takes the
// time; wrangler's /__scheduled does not).

const WRITERS = 4;
const CRASH_AFTER_MS = 2500;

/** The crash case, against the dev server at `server()`; it must run last (the server is killed and restarted). */
export function crashCases(server: () => DevServer) {
  describe("a crash mid-ingest (npm run dev killed with SIGKILL)", () => {
    it("keeps every acknowledged write exactly once, and the restart's minute pass embeds what was left pending", {
      timeout: 150_000,
    }, async () => {
      const { url } = server();
      const { adminToken } = devSecrets();
      const admin = async (method: string, path: string, body?: unknown) => {
        const response = await fetch(`${url}/admin${path}`, {
          method,
          headers: { authorization: `Bearer ${adminToken}`, "content-type": "application/json" },
          body: body === undefined ? undefined : JSON.stringify(body),
        });
        if (!response.ok) throw new Error(`admin ${method} ${path}: ${response.status} ${await response.text()}`);
        return response.json() as Promise<any>;
      };
      const tenant = await admin("POST", "/tenants", { name: "crash" });
      const keys: string[] = [];
      for (let w = 0; w < WRITERS; w++)
        keys.push(
          (await admin("POST", `/tenants/${tenant.tenant_id}/keys`, { name: `writer ${w}`, scopes: ["read", "write"] }))
            .api_key,
        );

      const acknowledged: string[] = [];
      const inFlight: string[] = [];
      let crashed = false;
      const writer = async (w: number) => {
        for (let i = 0; !crashed; i++) {
          const content = `Writer ${w} parcel ${i} goes to bay ${(w * 7 + i) % 40}.`;
          const [name, args] =
            i % 2 === 0
              ? ["memory_store", { content, namespace: "crash" }]
              : ["log_chat", { conversation_id: `chat-${w}`, role: "user", content, project_id: "crash" }];
          let answer: { error?: { message: string } };
          try {
            const response = await fetch(`${url}/jsonrpc?toolsets=all`, {
              method: "POST",
              headers: { authorization: `Bearer ${keys[w]}`, "content-type": "application/json" },
              body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/call", params: { name, arguments: args } }),
            });
            answer = (await response.json()) as typeof answer;
          } catch {
            inFlight.push(content); // the connection died with the server: not acknowledged
            return;
          }
          if (answer.error) throw new Error(`${name}: ${answer.error.message}`);
          acknowledged.push(content);
        }
      };
      const writing = Array.from({ length: WRITERS }, (_, w) => writer(w));
      await new Promise((r) => setTimeout(r, CRASH_AFTER_MS));
      crashed = true;
      await server().crash();
      await Promise.all(writing);
      await server().restart();

      const pendingAtRestart = (await admin("GET", `/tenants/${tenant.tenant_id}/stats`)).pending_embeddings as number;
      const restarted = Date.now();
      const pass = await fetch(
        `${url}/cdn-cgi/handler/scheduled?cron=${encodeURIComponent("* * * * *")}&time=${Date.now() + 3 * 60_000}&format=json`,
      );
      expect(await pass.json()).toMatchObject({ outcome: "ok" });
      let pending = pendingAtRestart;
      while (pending > 0 && Date.now() - restarted < 60_000) {
        await new Promise((r) => setTimeout(r, 500));
        pending = (await admin("GET", `/tenants/${tenant.tenant_id}/stats`)).pending_embeddings;
      }
      expect(pending).toBe(0);

      const exported = await (
        await fetch(`${url}/admin/tenants/${tenant.tenant_id}/export`, {
          headers: { authorization: `Bearer ${adminToken}` },
        })
      ).text();
      const stored = new Map<string, number>();
      for (const line of exported.split("\n").filter(Boolean)) {
        const record = JSON.parse(line) as { type: string; content?: string };
        if (record.type === "item") stored.set(record.content!, (stored.get(record.content!) ?? 0) + 1);
      }
      expect(acknowledged.length).toBeGreaterThan(0);
      expect(acknowledged.filter((c) => stored.get(c) !== 1)).toEqual([]);
      expect([...stored.values()].filter((n) => n > 1)).toEqual([]);
      console.log(
        `crash: ${acknowledged.length} acknowledged writes by ${WRITERS} writers in ${CRASH_AFTER_MS} ms, all found exactly once; ${inFlight.length} in flight at the SIGKILL ` +
          `(${inFlight.filter((c) => stored.has(c)).length} of them stored, once); ${pendingAtRestart} items pending after the restart, all embedded ${Date.now() - restarted} ms after the minute pass`,
      );
    });
  });
}
