import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { meteredR2 } from "../src/adapters/metered-bindings";
import { noUnits, UnitMeter } from "../src/billable-units";
import { call, newTenant, untilLogged, usageLogSettled } from "./helpers";

// What documents cost in R2: Class A for each write or list of an original or its Markdown, Class B for each read,
// nothing for a delete (docs/costs.md), per tool call in get_usage_report.

type Row = { tool: string; calls: number; r2_class_a: number | null; r2_class_b: number | null };
type Report = { tools: Row[]; totals: { r2_class_a: number; r2_class_b: number } };

describe("R2 operations are metered", () => {
  it("counts writes and lists as Class A, reads and heads as Class B, deletes as nothing", async () => {
    const meter = new UnitMeter();
    const units = noUnits();
    const bucket = meteredR2(env.DOCUMENTS, meter);
    await meter.charging(units, async () => {
      await bucket.put("metering/a", "one");
      await bucket.put("metering/b", "two");
      await bucket.list({ prefix: "metering/" });
      await (await bucket.get("metering/a"))?.text();
      await bucket.head("metering/b");
      await bucket.delete(["metering/a", "metering/b"]);
    });
    expect([units.r2ClassA, units.r2ClassB]).toEqual([3, 2]);
  });

  it("gives each document tool's R2 operations in get_usage_report, and the period's in its totals", async () => {
    const t = await newTenant();
    const { document_id } = await call(t.apiKey, "memory_ingest_document", {
      content: "# Costs\n\nR2 keeps the original and its Markdown: two writes.",
    });
    await call(t.apiKey, "memory_get_document", { document_id, include_markdown: true });
    await call(t.apiKey, "memory_get_document", { document_id });
    await call(t.apiKey, "memory_delete_document", { document_id });
    await untilLogged(t.tenantId, 4);
    await usageLogSettled(t.tenantId);
    const report = await call<Report>(t.apiKey, "get_usage_report", {});
    const row = (tool: string) => report.tools.find((r) => r.tool === tool);
    // The original and its Markdown written; the Markdown read once of two calls; a deletion lists the document's
    // objects (Class A) and deletes them (free).
    expect(row("memory_ingest_document")).toMatchObject({ calls: 1, r2_class_a: 2, r2_class_b: 0 });
    expect(row("memory_get_document")).toMatchObject({ calls: 2, r2_class_a: 0, r2_class_b: 0.5 });
    expect(row("memory_delete_document")).toMatchObject({ calls: 1, r2_class_a: 1, r2_class_b: 0 });
    expect([report.totals.r2_class_a, report.totals.r2_class_b]).toEqual([3, 1]);
  });
});
