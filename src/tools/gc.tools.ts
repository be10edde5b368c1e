import type { AnyTool } from "./registry";

/** Seed 004's working-set, GC, stash and task tools (being written). */
export const GC_TOOLS: AnyTool[] = [];
