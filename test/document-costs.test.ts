import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { meteredR2 } from "../src/adapters/metered-bindings";
import { IMAGE_INPUT_TOKENS } from "../src/adapters/to-markdown-neurons";
import { noUnits, UnitMeter } from "../src/billable-units";
import { callTool, deployment } from "./dispatch-helpers";
import { call, newTenant, untilLogged, usageLogSettled } from "./helpers";

// What documents cost in R2: Class A for each write or list of an original or its Markdown, Class B for each read,
// nothing for a delete (docs/costs.md), per tool call in get_usage_report.

type Row = {
  tool: string;
  calls: number;
  r2_class_a: number | null;
  r2_class_b: number | null;
  ai_neurons: number | null;
};
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

  it("counts the neurons toMarkdown's image descriptions are estimated to cost, and none for what it converts free", async () => {
    // The AI binding as the platform answers: an image described by @cf/google/gemma-3-12b-it, a spreadsheet free.
    const description = "A bar chart of monthly revenue, rising from 10 to 40 thousand euros between January and June.";
    const ai = {
      toMarkdown: async (file: { name: string; blob: Blob }) => ({
        name: file.name,
        mimeType: file.blob.type,
        format: "markdown",
        tokens: 0,
        data: file.blob.type.startsWith("image/") ? description : "| month | revenue |\n| --- | --- |\n| Jan | 10 |",
      }),
    } as unknown as Ai;
    const d = deployment({ DOCUMENT_CONVERTER: "workers-ai", AI: ai });
    const t = await newTenant();
    const png = new Uint8Array([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0, 0]);
    await callTool(d, t, "memory_ingest_document", { content_base64: btoa(String.fromCharCode(...png)) });
    await untilLogged(t.tenantId, 1);
    const sheet = new Uint8Array([0x50, 0x4b, 0x03, 0x04, 1, 2, 3]);
    await callTool(d, t, "memory_ingest_document", {
      content_base64: btoa(String.fromCharCode(...sheet)),
      mime_type: "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
    });
    await untilLogged(t.tenantId, 2);
    await usageLogSettled(t.tenantId);
    const report = await call<Report>(t.apiKey, "get_usage_report", {});
    const ingest = report.tools.find((r) => r.tool === "memory_ingest_document")!;
    // 406 tokens in at 31,371 neurons per M, the description's ~24 tokens out (96 characters) at 50,560: 12.74 + 1.21.
    const expected = Math.ceil((IMAGE_INPUT_TOKENS * 31_371 + Math.ceil(description.length / 4) * 50_560) / 1e6);
    expect(expected).toBe(14);
    // Two calls, one image: the tool's mean per call is half of it.
    expect(ingest).toMatchObject({ calls: 2, ai_neurons: expected / 2 });
  });
});
