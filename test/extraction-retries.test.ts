import { describe, expect, it } from "vitest";
import { callWith } from "./fault-helpers";
import { call, newTenant, type TestTenant } from "./helpers";

// A client's retry after a queue failure, with extraction on (the `extraction` vitest project): the write committed,
// so the call succeeds and answers its ids whatever the queue did; a retry with the same idempotency_key answers the
// same ids and stores nothing more (docs/faults.md).

const TURNS = [
  { role: "user", speaker: "Ana", content: "I moved to Lisbon last spring." },
  { role: "assistant", content: "Lisbon, noted." },
];

const stored = async (t: TestTenant) => {
  const row = await t.db
    .prepare(
      `SELECT (SELECT COUNT(*) FROM items WHERE tenant_id = ?1) AS items,
              (SELECT COUNT(*) FROM idempotency_keys WHERE tenant_id = ?1) AS keys`,
    )
    .bind(t.tenantId)
    .first<{ items: number; keys: number }>();
  return row!;
};

describe("the job queue down after the write", () => {
  it("memory_ingest answers its ids with extraction queued; the retry with its key answers the same and stores nothing", async () => {
    const t = await newTenant();
    const args = { conversation_id: "lisbon", messages: TURNS, idempotency_key: "ingest-lisbon" };
    const first = await callWith("queue:down", t, "memory_ingest", args);
    expect(first.error).toBeUndefined();
    expect(first.result).toMatchObject({ conversation_id: "lisbon", extraction: "queued" });
    expect(first.result!.ids).toHaveLength(2);
    expect(await stored(t)).toEqual({ items: 2, keys: 1 });

    expect((await callWith("queue:down", t, "memory_ingest", args)).result).toEqual(first.result);
    expect(await call(t.apiKey, "memory_ingest", args)).toEqual(first.result);
    expect(await stored(t)).toEqual({ items: 2, keys: 1 });
  });

  it("log_chat answers its message id; the retry with its key answers the same and stores nothing", async () => {
    const t = await newTenant();
    const args = {
      conversation_id: "c",
      role: "user",
      content: "I moved to Porto in May.",
      idempotency_key: "chat-porto",
    };
    const first = await callWith("queue:down", t, "log_chat", args);
    expect(first.error).toBeUndefined();
    expect(first.result!.message_id).toEqual(expect.any(String));
    expect((await callWith("queue:down", t, "log_chat", args)).result).toEqual(first.result);
    expect(await call(t.apiKey, "log_chat", args)).toEqual(first.result);
    expect(await stored(t)).toEqual({ items: 1, keys: 1 });
  });
});
