import { afterAll, beforeAll } from "vitest";
import { type DevServer, startDevServer } from "../fixtures/dev-server";
import { cliCases } from "./dev-server/cli-cases";
import { cloudflareAgentCases } from "./dev-server/cloudflare-agent-cases";
import { crashCases } from "./dev-server/crash-cases";
import { extractionCases } from "./dev-server/extraction-cases";
import { frameworkCases } from "./dev-server/framework-cases";
import { memoryToolCases } from "./dev-server/memory-tool-cases";
import { smokeCases } from "./dev-server/smoke-cases";

// What is tested against the newcomer's own server, `npm run dev` on a free port with its own state: one
// server for both files of cases (each start costs ~20 s of both cores): the smoke script (and deploy's
// smoke step), the operator CLI, Claude's memory tool example, the agent framework recipes, the Cloudflare
// Agents SDK example (its own `wrangler dev` beside this one), and last a crash mid-ingest and restart.

let server: DevServer | undefined;
beforeAll(async () => {
  server = await startDevServer();
}, 270_000);
afterAll(() => server?.stop());

const url = () => server!.url;
smokeCases(url);
cliCases(url);
memoryToolCases(url);
frameworkCases(url);
cloudflareAgentCases(url);
extractionCases(url);
// Last: it kills the server with SIGKILL and starts it again.
crashCases(() => server!);
