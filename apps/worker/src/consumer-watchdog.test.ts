/** healAfterMs: the consumer watchdog's wait before each heal, doubling while a consumer takes nothing. */
import { expect, it } from 'vitest';
import { healAfterMs, MAX_HEAL_INTERVAL_MS } from './consumer-watchdog.js';

it('waits WORKER_WATCHDOG_MS before the first heal, then twice as long each time, at most 30 s', () => {
  expect([0, 1, 2, 3, 4, 5, 20].map((n) => healAfterMs(3000, n))).toEqual([3000, 6000, 12_000, 24_000, 30_000, 30_000, 30_000]);
  expect(MAX_HEAL_INTERVAL_MS).toBe(30_000);
  // A setting longer than the cap is kept as it is.
  expect(healAfterMs(60_000, 3)).toBe(60_000);
});
