// What ingesting a file costs, per page (documents.mjs): each file goes through `POST /documents` (its bytes as the
// body) RUNS times, each into a tenant of its own; the D1 rows and R2 operations are what the worker recorded in
// its usage log (usage_hours in the bench server's local D1, read as cost.mjs reads it): the call's own (the tool's
// row), and with its jobs (embed, link) and the scheduled passes they led to (posting blocks). Time: the request as
// the client waited for it, and the worker's CPU while it ran (V8 samples through the inspector, worker-cpu.mjs:
// locally the platform reports no CPU time). Each converter's library is imported on first use, so one file of each
// type goes first, unmeasured: the figures are a warm isolate's.
import { OBSERVER_PARTS, settled } from "./cost.mjs";
import { UNIT_COLUMNS } from "./cost-model.mjs";
import { localUsageUnits } from "./local-d1.mjs";
import { fmt, percentile } from "./metrics.mjs";
import { BASE, INSPECTOR_URL } from "./worker.mjs";
import { profileWorker } from "./worker-cpu.mjs";

const RUNS = Number(process.env.DOCUMENTS_RUNS ?? 3);
const COLUMNS = [...UNIT_COLUMNS, "r2_class_a", "r2_class_b"];
const TOOL = "tool:memory_ingest_document";

/** POST /documents with the file as the body; the tool's answer. */
export async function uploadFile(key, file, project) {
  const response = await fetch(`${BASE}/documents?project_id=${project}`, {
    method: "POST",
    headers: { authorization: `Bearer ${key}`, "content-type": file.type },
    body: file.bytes,
  });
  const body = await response.json();
  if (!response.ok) throw new Error(`POST /documents (${file.name}): ${response.status} ${JSON.stringify(body)}`);
  return body;
}

/**
 * Each file's figures: {file, answer (the tool's last answer), requestMs (median), cpuMs, call, total}, `call` and
 * `total` the units per run ({d1_rows_read, d1_rows_written, r2_class_a, ...}) of the call alone and with its jobs and
 * passes. Each run goes into a tenant of its own: a second copy of the same file in one tenant would be linked to the
 * first by the link job (identical chunks), which a first ingest does not pay.
 */
export async function measureFiles(newTenant, files) {
  const warm = await newTenant("documents-warm");
  const warmKey = await warm.newKey();
  for (const type of new Set(files.map((f) => f.type)))
    await uploadFile(
      warmKey,
      files.find((f) => f.type === type),
      "warm",
    );
  const measured = [];
  for (const file of files) {
    const runs = [];
    for (let run = 0; run < RUNS; run++) runs.push(await measureRun(newTenant, file, run));
    const mean = (part) => Object.fromEntries(COLUMNS.map((c) => [c, runs.reduce((s, r) => s + r[part][c], 0) / RUNS]));
    measured.push({
      file,
      answer: runs.at(-1).answer,
      requestMs: percentile(
        runs.map((r) => r.requestMs),
        50,
      ),
      cpuMs: runs.reduce((s, r) => s + r.cpuMs, 0) / RUNS,
      call: mean("call"),
      total: mean("total"),
    });
  }
  return measured;
}

/** One ingest of `file` into a fresh tenant: its answer, time, CPU and units (the call's, and with jobs and passes). */
async function measureRun(newTenant, file, run) {
  const tenant = await newTenant(`documents-${file.name.replace(/\W+/g, "-")}-${run}`);
  const key = await tenant.newKey();
  const usage = localUsageUnits(tenant.id, COLUMNS);
  const before = await usage();
  const profile = await profileWorker(INSPECTOR_URL);
  const started = performance.now();
  const answer = await uploadFile(key, file, "documents");
  const requestMs = performance.now() - started;
  const cpuMs = await profile.stop();
  const after = await settled(tenant, usage, before);
  return {
    answer,
    requestMs,
    cpuMs,
    call: difference(after.parts[TOOL], before.parts[TOOL]),
    total: difference(spent(after), spent(before)),
  };
}

/** The units of a reading less the bench's own admin requests (the observer's, as cost.mjs leaves them out). */
function spent(reading) {
  return Object.fromEntries(
    COLUMNS.map((c) => [c, reading.units[c] - OBSERVER_PARTS.reduce((s, k) => s + (reading.parts[k]?.[c] ?? 0), 0)]),
  );
}

const difference = (after, before) =>
  Object.fromEntries(COLUMNS.map((c) => [c, (after?.[c] ?? 0) - (before?.[c] ?? 0)]));

/** The printed table: per file, then per page. */
export function perPageLines(measured) {
  const lines = [
    `Documents through POST /documents, ${RUNS} runs each (warm isolate); D1 rows and R2 operations from the worker's usage log (local D1), CPU from V8 samples`,
    `  ${"file".padEnd(28)} pages  sections  chunks      KB  request ms  worker CPU ms  rows written: call / with jobs | per page: request ms  CPU ms  rows written: call / with jobs`,
  ];
  for (const m of measured) {
    const pages = m.file.pages;
    lines.push(
      `  ${m.file.name.padEnd(28)}${String(m.answer.pages ?? `(${pages})`).padStart(5)}${String(m.answer.sections).padStart(10)}${String(m.answer.chunks).padStart(8)}` +
        `${fmt(m.file.bytes.byteLength / 1024, 0).padStart(8)}${fmt(m.requestMs, 0).padStart(12)}${fmt(m.cpuMs, 0).padStart(15)}` +
        `${`${fmt(m.call.d1_rows_written, 0)} / ${fmt(m.total.d1_rows_written, 0)}`.padStart(32)} |` +
        `${fmt(m.requestMs / pages, 0).padStart(21)}${fmt(m.cpuMs / pages, 0).padStart(8)}` +
        `${`${fmt(m.call.d1_rows_written / pages, 1)} / ${fmt(m.total.d1_rows_written / pages, 1)}`.padStart(32)}`,
    );
  }
  lines.push(
    "  (pages in parentheses: the Word file and the web page hold the 5-page PDF's text and are divided by its 5 pages)",
  );
  return lines;
}

/** The cost line of a 20-page PDF (issue 62 asks the cost bench for it; it is measured here, docs/costs.md). */
export function twentyPageLine(measured) {
  const m = measured.find((x) => x.file.type === "application/pdf" && x.file.pages === 20);
  if (!m) return [];
  return [
    `  a 20-page PDF: rows written ${fmt(m.call.d1_rows_written, 0)} (call) / ${fmt(m.total.d1_rows_written, 0)} (with jobs and passes); ` +
      `rows read ${fmt(m.call.d1_rows_read, 0)} / ${fmt(m.total.d1_rows_read, 0)}; R2 class A ${fmt(m.call.r2_class_a, 0)}, class B ${fmt(m.call.r2_class_b, 0)}; ` +
      `queue messages ${fmt(m.total.queue_sends, 2)}; conversion and writes in the request: ${fmt(m.requestMs, 0)} ms, worker CPU ${fmt(m.cpuMs, 0)} ms`,
  ];
}
