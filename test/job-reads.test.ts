import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { shardDatabase } from "../src/control/shards";
import { autoLinkItems } from "../src/core/graph/auto-link";
import { embedItems } from "../src/core/memory/embedding";
import { writeItems } from "../src/core/memory/items";
import { setPinned } from "../src/core/working-set/gc";
import { stashItems, unstashItems } from "../src/core/working-set/stash";
import { tenantScope } from "../src/db/scope";
import type { Env } from "../src/env";
import { buildServices } from "../src/services";

/** A D1 binding that records how many rows each statement read (D1's meta.rows_read). */
function rowsReadD1(inner: D1Database, log: { sql: string; rows: number }[]): D1Database {
  const INNER = Symbol("inner");
  type Wrapped = D1PreparedStatement & { [INNER]: D1PreparedStatement; sql: string };
  const record = <T extends D1Result>(sql: string, result: T): T => (
    log.push({ sql, rows: result.meta.rows_read }), result
  );
  const wrap = (statement: D1PreparedStatement, sql: string): Wrapped =>
    ({
      [INNER]: statement,
      sql,
      bind: (...values: unknown[]) => wrap(statement.bind(...values), sql),
      all: async () => record(sql, await statement.all()),
      run: async () => record(sql, await statement.run()),
      first: () => Promise.reject(new Error("first() reports no rows_read")),
      raw: () => Promise.reject(new Error("raw() reports no rows_read")),
    }) as unknown as Wrapped;
  return {
    prepare: (sql: string) => wrap(inner.prepare(sql), sql),
    batch: async (statements: Wrapped[]) =>
      (await inner.batch(statements.map((s) => s[INNER]))).map((result, i) => record(statements[i]!.sql, result)),
  } as unknown as D1Database;
}

/** The data shard these made-up tenants live on. */
const db = shardDatabase(env, "SHARD_0");

/** A new tenant, and services whose queue sends nothing (the jobs are run by hand). */
async function newTenant(tenantId: string) {
  const services = {
    ...buildServices(env as unknown as Env, db, { tenantIndex: null }, () => {}),
    jobs: { send: async () => {} },
  };
  await env.CONTROL.prepare("INSERT INTO tenants (id, name, created_at, shard) VALUES (?, ?, 0, 'SHARD_0')")
    .bind(tenantId, tenantId)
    .run();
  return { services, scope: tenantScope(db, tenantId) };
}

describe("background jobs read rows in proportion to the job, not the tenant", () => {
  it("embedding and auto-linking two new items in a project of 300 read a few dozen rows per statement, links in one", async () => {
    const tenantId = "job-reads";
    const { services, scope } = await newTenant(tenantId);
    const topics = [
      "harbour",
      "glacier",
      "orchard",
      "violin",
      "copper",
      "lantern",
      "falcon",
      "meadow",
      "canyon",
      "thistle",
    ];
    const texts = Array.from(
      { length: 300 },
      (_, i) => `Note ${i} about the ${topics[i % 10]} and the ${topics[(i * 3 + 1) % 10]}, filed under ${i % 13}`,
    );
    const earlier = await writeItems(
      scope,
      services,
      texts.map((content) => ({ project: "p", kind: "memory", type: "note", content })),
    );
    await embedItems(
      scope,
      services,
      earlier.map((w) => w.id),
    );
    await autoLinkItems(
      scope,
      services,
      earlier.map((w) => w.id),
    );

    const log: { sql: string; rows: number }[] = [];
    const counted = tenantScope(rowsReadD1(db, log), tenantId);
    // Near copies of two earlier notes: each links to its original (and to that note's close neighbours).
    const fresh = await writeItems(
      counted,
      services,
      [`${texts[4]} (copy)`, `${texts[7]} (copy)`].map((content) => ({
        project: "p",
        kind: "memory",
        type: "note",
        content,
      })),
    );
    const ids = fresh.map((w) => w.id);
    log.length = 0;
    await embedItems(counted, services, ids);
    await autoLinkItems(counted, services, ids);
    expect(log.length).toBeGreaterThan(4);
    for (const { sql, rows } of log) expect(rows, sql.replace(/\s+/g, " ")).toBeLessThan(60);
    // All the job's links in one statement.
    expect(log.filter((l) => l.sql.includes("INSERT INTO links"))).toHaveLength(1);
    const links = await db
      .prepare("SELECT COUNT(*) AS n FROM links WHERE tenant_id = ? AND source_id IN (?, ?)")
      .bind(tenantId, ...ids)
      .first<{ n: number }>("n");
    expect(links).toBeGreaterThanOrEqual(2);
  });
});

describe("a merged job's memory stays bounded", () => {
  it("embedding 120 large items reads their chunks in groups of at most 250,000 tokens; linking reads no item contents", async () => {
    const tenantId = "job-memory";
    const { services, scope } = await newTenant(tenantId);
    const words = [
      "harbour",
      "glacier",
      "orchard",
      "violin",
      "copper",
      "lantern",
      "falcon",
      "meadow",
      "canyon",
      "thistle",
      "quarry",
      "saddle",
    ];
    const big = (n: number) =>
      Array.from({ length: 1500 }, (_, i) => `${words[(i * 7 + n) % 12]}${(i * 31 + n) % 97}`).join(" ");
    const written = await writeItems(
      scope,
      services,
      Array.from({ length: 120 }, (_, n) => ({
        project: "p",
        kind: "document" as const,
        type: "note",
        content: big(n),
      })),
    );
    const ids = written.map((w) => w.id);
    const tokens = (await db
      .prepare("SELECT SUM(tokens) AS n FROM items WHERE tenant_id = ?")
      .bind(tenantId)
      .first<number>("n"))!;
    expect(tokens).toBeGreaterThan(250_000);

    const log: { sql: string; rows: number }[] = [];
    const counted = tenantScope(rowsReadD1(db, log), tenantId);
    await embedItems(counted, services, ids);
    const reads = log.filter((l) => l.sql.includes("SELECT c.id, c.item_id, c.content"));
    expect(reads.length).toBeGreaterThanOrEqual(Math.max(2, Math.ceil(tokens / 250_000)));
    const pending = await db
      .prepare("SELECT COUNT(*) AS n FROM items WHERE tenant_id = ? AND embedded_at IS NULL")
      .bind(tenantId)
      .first("n");
    expect(pending).toBe(0);

    log.length = 0;
    await autoLinkItems(counted, services, ids);
    expect(log.length).toBeGreaterThan(2);
    for (const { sql } of log) expect(sql, sql.replace(/\s+/g, " ")).not.toMatch(/\bcontent\b/);
  });
});

describe("working-set writes by id read the rows they name, not the tenant's", () => {
  it("pinning, stashing and restoring two items of 300 read a few rows per statement", async () => {
    const tenantId = "set-reads";
    const { services, scope } = await newTenant(tenantId);
    const written = await writeItems(
      scope,
      services,
      Array.from({ length: 300 }, (_, i) => ({
        project: "p",
        kind: "memory",
        type: "note",
        content: `Working note ${i}`,
      })),
    );
    const two = [written[10]!.id, written[200]!.id];

    const log: { sql: string; rows: number }[] = [];
    const counted = tenantScope(rowsReadD1(db, log), tenantId);
    expect((await setPinned(counted, "p", [two[0]!], true)).segmentIds).toEqual([two[0]]);
    expect((await setPinned(counted, "p", [two[0]!], false)).segmentIds).toEqual([two[0]]);
    const segments = two.map((id) => ({ id, project: "p" }));
    expect((await stashItems(counted, segments)).ids.sort()).toEqual([...two].sort());
    expect((await unstashItems(counted, segments)).ids.sort()).toEqual([...two].sort());
    expect(log.length).toBeGreaterThanOrEqual(6);
    for (const { sql, rows } of log) expect(rows, sql.replace(/\s+/g, " ")).toBeLessThan(20);
  });
});
