import { applyD1Migrations } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { CHUNK_ID_RANGE } from "../../src/control/shard-identity";
import { shardDatabase, shardNames } from "../../src/control/shards";

// Setup files run before each test file; applyD1Migrations skips migrations already applied. The control
// database and every shard wrangler.toml binds (two: every test goes through routing), each shard with its
// identity as `npm run db:migrate` writes it (its chunk id range).
await applyD1Migrations(env.CONTROL, env.TEST_CONTROL_MIGRATIONS);
for (const [ordinal, shard] of shardNames(env).entries()) {
  const db = shardDatabase(env, shard);
  await applyD1Migrations(db, env.TEST_MIGRATIONS);
  await db
    .prepare("INSERT OR IGNORE INTO shard_identity (id, name, ordinal, next_chunk_id) VALUES (1, ?, ?, ?)")
    .bind(shard, ordinal, ordinal * CHUNK_ID_RANGE + 1)
    .run();
}
