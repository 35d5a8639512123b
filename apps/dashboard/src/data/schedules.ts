import { loadScheduleOverview, loadScheduleOverviews, readHistory, type OccurrenceRecord, type ScheduleOverview } from '@tickwork/schedules';
import type { Catalog, RedisClient } from '@tickwork/core';

/** One schedule on the pages: what `tickwork schedules` shows too (see loadScheduleOverviews). */
export type ScheduleRow = ScheduleOverview;

export interface ScheduleSource {
  catalog: Catalog;
  redis: RedisClient;
  prefix: string;
}

export const HISTORY_ROWS = 50;

/** Every scheduled job of the catalog with its registration, last outcomes, health and next 5 fire times. */
export function loadSchedules(src: ScheduleSource, now = new Date()): Promise<ScheduleRow[]> {
  return loadScheduleOverviews(src.redis, src.prefix, src.catalog, { now });
}

/** One schedule's row, or undefined when the catalog has no scheduled job of that name. */
export function loadSchedule(src: ScheduleSource, name: string, now = new Date()): Promise<ScheduleRow | undefined> {
  return loadScheduleOverview(src.redis, src.prefix, src.catalog, name, { now });
}

export async function loadHistory(src: ScheduleSource, name: string): Promise<OccurrenceRecord[]> {
  return readHistory(src.redis, src.prefix, name, HISTORY_ROWS);
}
