import { type DrizzleD1Database, drizzle } from "drizzle-orm/d1";
import * as schema from "../db/control-schema";

export type ControlDatabase = DrizzleD1Database<typeof schema>;

const opened = new WeakMap<D1Database, ControlDatabase>();

/** The drizzle database over the CONTROL binding (tenants, keys, shard map, job failures). */
export function openControl(d1: D1Database): ControlDatabase {
  let db = opened.get(d1);
  if (!db) opened.set(d1, (db = drizzle(d1, { schema })));
  return db;
}
