import { readFileSync } from "node:fs";

/**
 * Fires wrangler.toml's crons on their schedule against a `wrangler dev --test-scheduled` at `origin`, as production
 * runs them: wrangler dev fires none by itself. The every-minute pass re-sends jobs a local queue lost (a killed dev
 * server drops the messages it held). Returns a function that stops the timers.
 */
export function fireCrons(origin) {
  const crons =
    readFileSync(new URL("../wrangler.toml", import.meta.url), "utf8")
      .match(/^crons\s*=\s*\[(.*)\]/m)?.[1]
      .match(/"[^"]+"/g)
      ?.map((c) => c.slice(1, -1)) ?? [];
  const timers = crons.map((cron) => {
    const every = cron === "* * * * *" ? 60_000 : Number(cron.match(/^\*\/(\d+) /)?.[1] ?? 15) * 60_000;
    return setInterval(
      () => fetch(`${origin}/__scheduled?cron=${encodeURIComponent(cron)}`).catch(() => undefined),
      every,
    ).unref();
  });
  return () => timers.forEach(clearInterval);
}
