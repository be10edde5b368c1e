import { cloudflareTest, readD1Migrations } from "@cloudflare/vitest-plugin";
import { defineConfig } from "vitest/config";
import { writeLocalConfig } from "./scripts/local-config.mjs";

// Three projects: `workers` runs inside workerd against miniflare D1/KV/Queues, through the worker's
// real routes, with local adapters chosen by configuration exactly as `.dev.vars` does for
// `npm run dev` (memory extraction off, so what a test stores is all there is); `extraction` is the same with
// the offline extraction model on; `node` holds the checks that need the file system or start processes.
export default defineConfig(async () => {
  const migrations = await readD1Migrations("./migrations/shard");
  const controlMigrations = await readD1Migrations("./migrations/control");
  // wrangler.toml less the Workers AI and Vectorize bindings, which tests never call; written on every run.
  const localConfig = writeLocalConfig();
  /** A project of test files inside workerd, with `vars` beside the common bindings. */
  const workersProject = (name: string, vars: Record<string, string>, without: string[], only: string[] = []) => ({
    plugins: [
      cloudflareTest({
        wrangler: { configPath: localConfig },
        remoteBindings: false,
        miniflare: {
          bindings: {
            TEST_MIGRATIONS: migrations,
            TEST_CONTROL_MIGRATIONS: controlMigrations,
            ADMIN_TOKEN: "test-admin-token",
            EMBEDDER: "local",
            VECTOR_INDEX: "local",
            EMBEDDING_DIMENSIONS: "256",
            // Exercise rank fusion as a semantic embedder would (the lexical default is 0).
            HYBRID_VECTOR_WEIGHT: "1",
            // Documents with the libraries alone, as `npm run dev` converts them (no Workers AI).
            DOCUMENT_CONVERTER: "local",
            // The tenant limit's binding allows so much that only a tenant with a calls_per_minute override
            // meets it (test/quotas.test.ts); TENANT_CALLS_PER_MINUTE tells the Worker the binding's limit.
            TENANT_CALLS_PER_MINUTE: "100000",
            // The usage log writes what it holds 50 ms after the first call instead of 20 s: tests read it soon after.
            FLUSH_USAGE_MS: "50",
            // Tests deliver the jobs a write sends; per-minute dispatch, the default, has its own (test/job-dispatch.test.ts).
            JOB_DISPATCH: "per-write",
            // D1's queries per invocation: 1,000 (Paid) unless the run asks for the Free plan's 50
            // (`D1_QUERIES_PER_INVOCATION=50 npx vitest run --project workers`, docs/limits.md).
            ...vars,
            ...(process.env.D1_QUERIES_PER_INVOCATION
              ? { D1_QUERIES_PER_INVOCATION: process.env.D1_QUERIES_PER_INVOCATION }
              : {}),
          },
          ratelimits: {
            RATE_LIMITER: { namespace_id: "1001", simple: { limit: 40, period: 60 } },
            TENANT_RATE_LIMITER: { namespace_id: "1002", simple: { limit: 100_000, period: 60 } },
          },
        },
      }),
    ],
    test: {
      name,
      include: only.length > 0 ? only : ["test/**/*.test.ts"],
      exclude: ["test/node/**", "test/bench/**", ...without],
      setupFiles: ["./test/setup/apply-migrations.ts"],
      // The first call in a file loads the tokenizer and the local index; 5 s is too tight on 2 cores.
      testTimeout: 20_000,
    },
  });
  return {
    test: {
      // Two test files at a time (vitest's default on 2 cores is one): 172 s for the suite instead of 326 s here.
      // Each file has its own runtime and storage, so files running side by side do not meet.
      maxWorkers: 2,
      projects: [
        workersProject("workers", { LLM: "off" }, ["test/extraction*.test.ts"]),
        // Memory extraction with its offline model, on for every project unless a test says otherwise.
        workersProject("extraction", { LLM: "local", EXTRACT_BY_DEFAULT: "true" }, [], ["test/extraction*.test.ts"]),
        {
          // These tests start processes (npm run deploy against a fake wrangler, dev servers): on 2 cores one
          // deploy run takes 4-7 s, past vitest's default of 5 s.
          test: { name: "node", include: ["test/node/**/*.test.ts"], environment: "node", testTimeout: 30_000 },
        },
      ],
    },
  };
});
