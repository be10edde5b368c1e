import { z } from "zod";
import { invalidParameter, permissionDenied } from "../errors";
import { ITEM_TYPES, MAX_ITEM_CHARS } from "../core/item-types";
import type { ToolContext } from "./registry";

/** Shared parameter shapes, so every tool states the same limits in the same words. */
export const contentParam = z.string().min(1).max(MAX_ITEM_CHARS);
export const projectName = z.string().min(1).max(200);
export const tagsParam = z.array(z.string().min(1).max(100)).max(50);
export const metadataParam = z.record(z.string(), z.unknown());
export const itemTypeParam = z.enum(ITEM_TYPES);
export const conversationIdParam = z.string().min(1).max(200);

/** An ISO 8601 date or epoch milliseconds, as epoch ms. */
export const timestampParam = z.union([z.string(), z.number()]);

export function parseTimestamp(value: string | number | undefined, parameter: string): number | undefined {
  if (value === undefined) return undefined;
  const ms = typeof value === "number" ? value : Date.parse(value);
  if (!Number.isFinite(ms)) throw invalidParameter(parameter, `Invalid parameter '${parameter}': '${value}' is not an ISO 8601 date or epoch milliseconds`);
  return ms;
}

/** The projects a query may read: the one asked for, else every project the key may touch (undefined = all). */
export function readableProjects(ctx: ToolContext, requested: string | undefined): string[] | undefined {
  if (requested !== undefined) return [requested];
  return ctx.caller.projects ?? undefined;
}

export function iso(ms: number): string {
  return new Date(ms).toISOString();
}

/** For tools whose project is implied (seed 003 has none): a project-limited key must still be allowed it. */
export function requireProjectAccess(ctx: ToolContext, project: string): void {
  const allowed = ctx.caller.projects;
  if (allowed !== null && !allowed.includes(project)) {
    throw permissionDenied(`This key may not touch project '${project}'; it is limited to: ${allowed.join(", ")}`, { allowed_projects: allowed });
  }
}
