import { defineConfig } from "drizzle-kit";

// `npm run db:generate` writes SQL migrations from src/db/schema.ts into migrations/.
// FTS5 tables and triggers cannot be expressed in drizzle and live in hand-written migrations.
export default defineConfig({
  dialect: "sqlite",
  schema: "./src/db/schema.ts",
  out: "./migrations",
});
