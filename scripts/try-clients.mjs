#!/usr/bin/env node
// Calls every tool of a running server (default: `npm run dev`) through mcp-remote, the stdio bridge desktop
// hosts use, with arguments derived from each tool's input schema. A tool may answer isError (the derived ids
// do not exist); what must not happen is a client-side error (a result the client cannot read or validate).
// Usage: node scripts/try-clients.mjs [url] [key]
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { sample } from "./schema-sample.mjs";

const url = process.argv[2] ?? "http://localhost:8787/mcp?toolsets=all";
const key = process.argv[3] ?? "ce_dev_local_only_0000000000000000000000000";

const transport = new StdioClientTransport({
  command: "npx",
  // biome-ignore lint/suspicious/noTemplateCurlyInString: mcp-remote expands ${CONTEXT_EDGE_AUTH} from its environment
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
console.log(
  `mcp-remote: ${tools.length} tools listed; ${ok} results, ${toolErrors.length} isError results, ${clientErrors.length} client-side errors`,
);
if (toolErrors.length > 0) console.log(`  isError: ${toolErrors.join(", ")}`);
for (const line of clientErrors) console.log(`  ${line}`);
await client.close();
process.exit(clientErrors.length === 0 ? 0 : 1);
