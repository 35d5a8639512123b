/** Herd schedule i as the schedule API takes it: the bench's no-op job, daily at the herd's minute, UTC. */
import type { ScheduleInput } from '@tickwork/schedules';
import { benchTick } from '../schedules/catalog.js';

export const herdId = (i: number) => `herd:user-${i}`;

export function herdInput(pattern: string, i: number): ScheduleInput<typeof benchTick> {
  return { job: benchTick, tz: 'UTC', data: { i }, pattern };
}

/** The daily cron pattern that fires at `at` (a whole UTC minute). */
export function dailyPatternAt(at: number): string {
  const d = new Date(at);
  return `${d.getUTCMinutes()} ${d.getUTCHours()} * * *`;
}
