export function passedVars(args: readonly string[]): Record<string, string>;
export function defaultVarArgs(
  defaults: Record<string, string>,
  fromFile: Record<string, string>,
  passed: Record<string, string>,
): string[];
