/** Schedule i of the tickwork side as the schedule API takes it (shared by the bench and its fill processes). */
import type { ScheduleInput } from '@tickwork/runtime';
import { benchTick } from './catalog.js';
import type { Spread } from './spread.js';

export function tickworkInput(spread: Spread, i: number): ScheduleInput<typeof benchTick> {
  const t = spread.tickwork(i);
  // The engine's `every` is anchored to the epoch and takes no phase (ScheduleInput): schedules sharing an
  // interval all fall due at one instant, so the spread must be a cron pattern with seconds (spread.ts).
  if (!('pattern' in t)) throw new Error(`tickwork's every takes no offset: run with BENCH_SPREAD=seconds (${spread.describe})`);
  return { job: benchTick, tz: 'UTC', data: { i }, pattern: t.pattern };
}

export const scheduleId = (i: number) => `u:${i}`;
