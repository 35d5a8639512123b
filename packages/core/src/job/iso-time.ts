/**
 * ISO strings of times, remembered for the last time asked: a herd's runs share their nominal time, and
 * many end within the same millisecond, so each run's two or three `toISOString` calls (its idempotency key,
 * its history record's id and times) mostly find the string made already. One entry each, no growth.
 */
let lastMs = Number.NaN;
let lastIso = '';
let nowMs = Number.NaN;
let nowIso = '';

/** `new Date(ms).toISOString()`: throws a RangeError for an invalid time, as it does. */
export function isoOfMs(ms: number): string {
  if (ms !== lastMs) {
    lastIso = new Date(ms).toISOString();
    lastMs = ms;
  }
  return lastIso;
}

/** `new Date().toISOString()`. */
export function isoNow(): string {
  const ms = Date.now();
  if (ms !== nowMs) {
    nowIso = new Date(ms).toISOString();
    nowMs = ms;
  }
  return nowIso;
}
