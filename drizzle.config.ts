import { defineConfig } from "drizzle-kit";

// `npm run db:generate` writes SQL migrations from the schemas: src/db/schema.ts (every data shard) into
// migrations/shard/, and src/db/control-schema.ts (the control database) into migrations/control/.
// FTS5 tables and triggers cannot be expressed in drizzle and live in hand-written migrations.
const database = process.env.DRIZZLE_DATABASE === "control" ? "control" : "shard";
export default defineConfig({
  dialect: "sqlite",
  schema: database === "control" ? "./src/db/control-schema.ts" : "./src/db/schema.ts",
  out: `./migrations/${database}`,
});
