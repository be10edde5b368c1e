import { describe, expect, it } from "vitest";
import { callWith } from "./fault-helpers";
import { newTenant, type TestTenant } from "./helpers";

// A queue failure after the write, with extraction on (the `extraction` vitest project): the write committed, so the
// call succeeds and answers its ids whatever the queue did (docs/faults.md).

const TURNS = [
  { role: "user", speaker: "Ana", content: "I moved to Lisbon last spring." },
  { role: "assistant", content: "Lisbon, noted." },
];

const items = async (t: TestTenant) =>
  (await t.db.prepare("SELECT COUNT(*) AS n FROM items WHERE tenant_id = ?").bind(t.tenantId).first<{ n: number }>())!
    .n;

describe("the job queue down after the write", () => {
  it("memory_ingest answers its ids with extraction queued", async () => {
    const t = await newTenant();
    const first = await callWith("queue:down", t, "memory_ingest", { conversation_id: "lisbon", messages: TURNS });
    expect(first.error).toBeUndefined();
    expect(first.result).toMatchObject({ conversation_id: "lisbon", extraction: "queued" });
    expect(first.result!.ids).toHaveLength(2);
    expect(await items(t)).toBe(2);
  });

  it("log_chat answers its message id", async () => {
    const t = await newTenant();
    const args = { conversation_id: "c", role: "user", content: "I moved to Porto in May." };
    const first = await callWith("queue:down", t, "log_chat", args);
    expect(first.error).toBeUndefined();
    expect(first.result!.message_id).toEqual(expect.any(String));
    expect(await items(t)).toBe(1);
  });
});
