/**
 * When a failed window is tried again, after each failed try: the first retry within 5 minutes (the minute pass
 * picks it up within a minute of being due), then backing off, 7 tries in all within 21 hours. After the last,
 * only memory_reextract tries again.
 */
export const RETRY_DELAYS_MS = [2, 10, 30, 120, 360, 720].map((minutes) => minutes * 60_000);

/** Tries a window gets in all: the first, then one per delay. */
export const MAX_TRIES = RETRY_DELAYS_MS.length + 1;

/** When a window that has failed `tries` times is tried next; null when it has had all its tries. */
export function nextTryAt(tries: number, now: number): number | null {
  const delay = RETRY_DELAYS_MS[tries - 1];
  return delay === undefined ? null : now + delay;
}

/** A failed try's reason for memory_history: which try it was and what comes next. */
export function failedTryReason(tries: number, next: number | null): string {
  const which = `try ${tries} of ${MAX_TRIES} failed`;
  return next === null
    ? `${which}; no tries left: memory_reextract reads the window again`
    : `${which}; tried again at ${new Date(next).toISOString()}`;
}
