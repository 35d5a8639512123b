/** Schedule i of the tickwork side as the schedule API takes it (shared by the bench and its fill processes). */
import type { ScheduleInput } from '@tickwork/schedules';
import { benchTick } from './catalog.js';
import type { Spread } from './spread.js';

export function tickworkInput(spread: Spread, i: number): ScheduleInput<typeof benchTick> {
  const t = spread.tickwork(i);
  if ('pattern' in t) return { job: benchTick, tz: 'UTC', data: { i }, pattern: t.pattern };
  // The engine's `every` is anchored to the epoch and takes no phase (ScheduleInput has no offset).
  if (t.offsetMs !== undefined) throw new Error(`tickwork's every takes no offset: BENCH_SPREAD=${spread.mode} is for BullMQ alone`);
  return { job: benchTick, tz: 'UTC', data: { i }, every: t.every };
}

export const scheduleId = (i: number) => `u:${i}`;
