import { invalidParameter } from "../errors";
import { type AnyTool, CATEGORIES, type Category } from "./define-tool";

export const DEFAULT_TOOLSET = "core";
const TOOLSET_NAMES = [DEFAULT_TOOLSET, "all", ...CATEGORIES] as const;

/** The set of tools one connection sees. */
export interface Toolset {
  names: string[];
  includes(tool: AnyTool): boolean;
}

/** Parses `?toolsets=core,graph`. Unknown names are an error listing the valid ones. */
export function parseToolsets(param: string | undefined, fallback: string = DEFAULT_TOOLSET): Toolset {
  const names = (param ?? fallback)
    .split(",")
    .map((s) => s.trim())
    .filter(Boolean);
  if (names.length === 0) names.push(fallback);
  for (const name of names) {
    if (!(TOOLSET_NAMES as readonly string[]).includes(name)) {
      throw invalidParameter("toolsets", `Unknown toolset '${name}'. Valid toolsets: ${TOOLSET_NAMES.join(", ")}`);
    }
  }
  const all = names.includes("all");
  const core = names.includes(DEFAULT_TOOLSET);
  const categories = new Set(names.filter((n): n is Category => (CATEGORIES as readonly string[]).includes(n)));
  return {
    names,
    includes: (tool) => all || (core && tool.core === true) || categories.has(tool.category),
  };
}
