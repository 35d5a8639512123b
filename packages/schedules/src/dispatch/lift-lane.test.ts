/**
 * The add-ahead lane's timers (lift-lane.ts). A timer runs on the monotonic clock, and each clock's ms is
 * rounded its own way, so a timer can fire a millisecond before its time by the wall clock (Date.now). Its
 * lift must still take the jobs due at its time: lifting by the wall clock alone left about one in five to
 * the next sweep, up to a second late, in the scheduled-lane bench with occurrences added ahead. The clock is
 * set back here with vitest's fake timers (the wall clock moves, the timers' clock does not), and the lift
 * records what it is asked (the engine's lift against Redis: apps/scheduler/src/add-ahead.test.ts).
 */
import { createLogger } from '@tickwork/core';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { createLiftLane, type AheadLift } from './lift-lane.js';

afterEach(() => {
  vi.useRealTimers();
});

describe('createLiftLane', () => {
  it("a timer's lift takes the jobs due at its time, even when it fires before that time by the wall clock", async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'setInterval', 'clearInterval', 'Date'] });
    const asked: { queue: string; upTo: number }[] = [];
    const lift: AheadLift = {
      note: async () => undefined,
      lift: async (queue, now) => {
        asked.push({ queue, upTo: now ?? Date.now() });
        return 0;
      },
    };
    const lane = createLiftLane({ lift, queues: () => [], log: createLogger('test', 'silent') });
    try {
      const at = Date.now() + 100;
      await lane.note(new Map([['q', [{ id: 'a', at }]]]));
      vi.setSystemTime(Date.now() - 1); // the wall clock a millisecond behind the timers' clock
      await vi.advanceTimersByTimeAsync(100);
      expect(Date.now()).toBe(at - 1);
      expect(asked).toEqual([{ queue: 'q', upTo: at }]);
    } finally {
      lane.stop();
    }
  });
});
