// Export and import throughput at 10,000 items: MS MARCO passages stored in one project, exported as
// NDJSON (GET /admin/tenants/:t/export), imported into an empty tenant (POST .../import), then the
// copy's embedding jobs settle. Each step starts once the jobs before it have settled. Both through the admin API with the operator token, as curl would.
import { loadMsmarco } from "./data.mjs";
import { fmt } from "./metrics.mjs";
import { ADMIN_TOKEN, BASE } from "./worker.mjs";

const ITEMS = Number(process.env.OWNERSHIP_ITEMS ?? 10_000);

export async function runOwnership(newTenant) {
  const { corpus } = loadMsmarco();
  const source = await newTenant("ownership-source");
  for (let i = 0; i < ITEMS; i += 100) {
    const memories = Array.from({ length: Math.min(100, ITEMS - i) }, (_, j) => {
      const n = i + j;
      return {
        content: `${corpus[n % corpus.length].text}${n >= corpus.length ? ` (copy ${Math.floor(n / corpus.length)})` : ""}`,
      };
    });
    await source.call("memory_batch_store", { namespace: "docs", memories });
  }
  await source.settle(); // embedding and auto-link done, so the export is timed alone
  const headers = { authorization: `Bearer ${ADMIN_TOKEN}` };

  let started = performance.now();
  const exported = await (await fetch(`${BASE}/admin/tenants/${source.id}/export`, { headers })).text();
  const exportSeconds = (performance.now() - started) / 1000;
  const lines = exported.trimEnd().split("\n").length - 1;

  const target = await newTenant("ownership-target");
  started = performance.now();
  const response = await fetch(`${BASE}/admin/tenants/${target.id}/import`, {
    method: "POST",
    headers: { ...headers, "content-type": "application/x-ndjson" },
    body: exported,
  });
  const importSeconds = (performance.now() - started) / 1000;
  const summary = await response.json();
  if (!response.ok) throw new Error(`import failed: ${JSON.stringify(summary)}`);
  const settle = await target.drainEmbeddings();
  return [
    `Export and import, ${ITEMS} memories in one project (${(exported.length / 1_048_576).toFixed(1)} MB of NDJSON)`,
    `  export: ${fmt(lines / exportSeconds, 0)} records/s (${fmt(exportSeconds, 1)} s, streamed)`,
    `  import: ${fmt(summary.imported.items / importSeconds, 0)} items/s (${fmt(importSeconds, 1)} s: validated, chunked, counted, indexed); embedding settled ${fmt(settle, 1)} s later`,
  ];
}
