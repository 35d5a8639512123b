/** The consumer watchdog's waits: before each heal (doubling while a consumer takes nothing), and after a failover. */
import { expect, it } from 'vitest';
import { FAILOVER_WINDOW_MS, healAfterMs, MAX_HEAL_INTERVAL_MS, watchdogAfterMs } from './consumer-watchdog.js';

it('waits WORKER_WATCHDOG_MS before the first heal, then twice as long each time, at most 30 s', () => {
  expect([0, 1, 2, 3, 4, 5, 20].map((n) => healAfterMs(3000, n))).toEqual([3000, 6000, 12_000, 24_000, 30_000, 30_000, 30_000]);
  expect(MAX_HEAL_INTERVAL_MS).toBe(30_000);
  // A setting longer than the cap is kept as it is.
  expect(healAfterMs(60_000, 3)).toBe(60_000);
});

it('heals after 1 s for 30 s after a cluster failover, unless WORKER_WATCHDOG_MS is shorter', () => {
  const never = Date.now(); // mastersChangedAt() is 0 when this process saw no failover: now - 0
  expect(watchdogAfterMs(3000, never)).toBe(3000);
  expect(watchdogAfterMs(3000, 0)).toBe(1000);
  expect(watchdogAfterMs(3000, FAILOVER_WINDOW_MS - 1)).toBe(1000);
  expect(watchdogAfterMs(3000, FAILOVER_WINDOW_MS)).toBe(3000);
  expect(watchdogAfterMs(500, 10)).toBe(500);
  expect(FAILOVER_WINDOW_MS).toBe(30_000);
});
