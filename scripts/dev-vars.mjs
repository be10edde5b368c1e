// Which settings `npm run dev` passes to `wrangler dev` as --var, beside what .dev.vars holds and what the command
// line names: a default never overrides a setting of the user's, wherever it is given.

/** The `--var NAME:value` (or `--var=NAME:value`) settings among wrangler dev's arguments. */
export function passedVars(args) {
  return Object.fromEntries(
    args.flatMap((arg, i) => {
      const value = arg === "--var" ? args[i + 1] : arg.startsWith("--var=") ? arg.slice(6) : undefined;
      const at = value?.indexOf(":") ?? -1;
      return value && at > 0 ? [[value.slice(0, at), value.slice(at + 1)]] : [];
    }),
  );
}

/** The defaults neither .dev.vars (`fromFile`) nor the command line (`passed`) sets, as `--var` arguments. */
export function defaultVarArgs(defaults, fromFile, passed) {
  return Object.entries(defaults)
    .filter(([name]) => !(name in fromFile) && !(name in passed))
    .flatMap(([name, value]) => ["--var", `${name}:${value}`]);
}
