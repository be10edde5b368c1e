// Export and import for the operator CLI: streamed, with progress on stderr and a final count.

import { once } from "node:events";
import { createReadStream, createWriteStream, statSync } from "node:fs";
import { CliError, EXIT } from "./admin-client.mjs";

/** The server takes at most this much in one import (src/admin/ownership-routes.ts IMPORT_MAX_BYTES). */
export const IMPORT_MAX_BYTES = 50 * 1024 * 1024;

/** Progress on stderr: one line rewritten in place on a terminal, a line every `every` ms otherwise. */
export function progress(stream = process.stderr, every = 2000) {
  let last = 0;
  return {
    update(text, force = false) {
      const now = Date.now();
      if (stream.isTTY) stream.write(`\r${text}\x1b[K`);
      else if (force || now - last >= every) stream.write(`${text}\n`);
      last = now;
    },
    done(text) {
      stream.write(stream.isTTY ? `\r${text}\x1b[K\n` : `${text}\n`);
    },
  };
}

const mb = (bytes) => `${(bytes / 1024 / 1024).toFixed(1)} MB`;
const bar = (share) => `[${"#".repeat(Math.round(share * 20)).padEnd(20, ".")}] ${Math.floor(share * 100)}%`;

/** Streams a tenant's export to `out` (a file path, or stdout); returns the count of each record type. */
export async function exportTenant(client, tenant, { project, out, shown = progress() }) {
  const query = project ? `?project=${encodeURIComponent(project)}` : "";
  const response = await client.send("GET", `/tenants/${encodeURIComponent(tenant)}/export${query}`);
  const sink = out ? createWriteStream(out) : process.stdout;
  const counts = {};
  let bytes = 0;
  let pending = "";
  const decoder = new TextDecoder();
  const count = (line) => {
    if (!line) return;
    let type = "unreadable";
    try {
      type = JSON.parse(line).type ?? "untyped";
    } catch {}
    counts[type] = (counts[type] ?? 0) + 1;
  };
  for await (const chunk of response.body) {
    bytes += chunk.byteLength;
    if (!sink.write(chunk)) await once(sink, "drain");
    const lines = (pending + decoder.decode(chunk, { stream: true })).split("\n");
    pending = lines.pop();
    lines.forEach(count);
    shown.update(`exporting ${tenant}: ${records(counts)} records, ${mb(bytes)}`);
  }
  count(pending + decoder.decode());
  if (out) {
    sink.end();
    await once(sink, "finish");
  }
  const { header: _header, ...data } = counts;
  shown.done(
    `exported ${tenant}${project ? ` (project ${project})` : ""}: ${records(data)} records (${summary(data)}), ${mb(bytes)}${out ? ` to ${out}` : ""}`,
  );
  return data;
}

const records = (counts) => Object.entries(counts).reduce((sum, [type, n]) => sum + (type === "header" ? 0 : n), 0);
const summary = (counts) =>
  Object.entries(counts)
    .map(([type, n]) => `${n} ${type}`)
    .join(", ") || "none";

/** Sends a file to a tenant's import, its upload shown as a bar; returns the server's summary. */
export async function importFile(client, tenant, file, { project, format, shown = progress() }) {
  let size;
  try {
    const stat = statSync(file);
    if (!stat.isFile()) throw new Error("not a file");
    size = stat.size;
  } catch (error) {
    throw new CliError(`cannot read '${file}': ${error.code ?? error.message}`, EXIT.usage);
  }
  if (size === 0) throw new CliError(`'${file}' is empty`, EXIT.usage);
  if (size > IMPORT_MAX_BYTES)
    throw new CliError(
      `'${file}' is ${mb(size)}; an import takes at most ${mb(IMPORT_MAX_BYTES)}: split it (an export per project: --project)`,
      EXIT.usage,
    );
  let sent = 0;
  const chunks = createReadStream(file)[Symbol.asyncIterator]();
  const body = new ReadableStream({
    async pull(controller) {
      const { value, done } = await chunks.next();
      if (done) {
        shown.update(`importing ${file}: ${bar(1)} ${mb(size)} sent, the server is checking and writing it`, true);
        controller.close();
        return;
      }
      sent += value.byteLength;
      shown.update(`importing ${file}: ${bar(sent / size)} ${mb(sent)} of ${mb(size)}`);
      controller.enqueue(value);
    },
  });
  const params = new URLSearchParams();
  if (project) params.set("project", project);
  if (format) params.set("format", format);
  const query = params.size > 0 ? `?${params}` : "";
  const result = await (
    await client.send("POST", `/tenants/${encodeURIComponent(tenant)}/import${query}`, body, {
      "content-type": "application/x-ndjson",
      "content-length": String(size),
    })
  ).json();
  shown.done(
    `imported into ${tenant} (${result.format}): ${summary(result.imported)}; skipped as already there: ${summary(result.skipped)}`,
  );
  return result;
}
