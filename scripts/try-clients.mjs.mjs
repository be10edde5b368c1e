#!/usr/bin/env node
// Calls every tool of a running server (default: `npm run dev`) through mcp-remote, the stdio bridge desktop
// hosts use, with arguments derived from each tool's input schema. A tool may answer isError (the derived ids
// do not exist); what must not happen is a client-side error (a result the client cannot read or validate).
// Usage: node scripts/try-clients.mjs [url] [key]
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";

const url = process.argv[2] ?? "http://localhost:8787/mcp?toolsets=all";
const key = process.argv[3] ?? "ce_dev_local_only_0000000000000000000000000";

/** A value the schema accepts: the first branch of a union, the minimum of a range, one item of an array. */
export function sample(schema) {
  if (schema.default !== undefined) return schema.default;
  if (schema.anyOf) return sample(schema.anyOf.find((s) => s.type !== "null") ?? schema.anyOf[0]);
  if (schema.const !== undefined) return schema.const;
  if (schema.enum) return schema.enum[0];
  switch (schema.type) {
    case "string":
      return "x".repeat(Math.max(1, schema.minLength ?? 1));
    case "integer":
    case "number":
      return schema.minimum ?? 1;
    case "boolean":
      return false;
    case "array":
      return Array.from({ length: Math.max(1, schema.minItems ?? 1) }, () => sample(schema.items ?? { type: "string" }));
    case "object":
      return Object.fromEntries((schema.required ?? []).map((k) => [k, sample(schema.properties[k])]));
    default:
      return null;
  }
}

const transport = new StdioClientTransport({
  command: "npx",
  args: ["-y", "mcp-remote", url, "--header", "Authorization:${CONTEXT_EDGE_AUTH}"],
  env: { ...process.env, CONTEXT_EDGE_AUTH: `Bearer ${key}` },
  stderr: "ignore",
});
const client = new Client({ name: "try-clients", version: "1.0.0" });
await client.connect(transport);
const { tools } = await client.listTools();
let ok = 0;
const toolErrors = [];
const clientErrors = [];
for (const tool of tools) {
  try {
    const result = await client.callTool({ name: tool.name, arguments: sample(tool.inputSchema) });
    if (result.isError) toolErrors.push(`${tool.name} (${JSON.parse(result.content[0].text).error.code})`);
    else ok++;
  } catch (error) {
    clientErrors.push(`${tool.name}: ${error.message}`);
  }
}
console.log(`mcp-remote: ${tools.length} tools listed; ${ok} results, ${toolErrors.length} isError results, ${clientErrors.length} client-side errors`);
if (toolErrors.length > 0) console.log(`  isError: ${toolErrors.join(", ")}`);
for (const line of clientErrors) console.log(`  ${line}`);
await client.close();
process.exit(clientErrors.length === 0 ? 0 : 1);
