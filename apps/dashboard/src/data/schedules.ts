import {
  loadScheduleState,
  previewSchedule,
  readHistory,
  speedupOfRegistration,
  scheduleRegistryKey,
  type AnyJob,
  type Catalog,
  type OccurrenceRecord,
  type ScheduleHealth,
  type SchedulePreview,
} from '@tickwork/runtime';
import type { Redis } from 'ioredis';

export interface ScheduleRow extends SchedulePreview {
  /** Whether a scheduler has registered it in Redis (reconcile writes the registry). */
  registered: boolean;
  /** Set when the registered scheduler runs in fast staging mode (SCHEDULE_SPEEDUP): the real interval. */
  speedupMs: number | null;
  lastSuccess: OccurrenceRecord | null;
  lastFailure: OccurrenceRecord | null;
  health: ScheduleHealth;
}

export interface ScheduleSource {
  catalog: Catalog;
  redis: Redis;
  prefix: string;
}

export const HISTORY_ROWS = 50;

/** Every scheduled job of the catalog with its registration, last outcomes, health and next 5 fire times. */
export async function loadSchedules(src: ScheduleSource, now = new Date()): Promise<ScheduleRow[]> {
  const registry = await src.redis.hgetall(scheduleRegistryKey(src.prefix));
  const rows: ScheduleRow[] = [];
  for (const job of src.catalog.scheduled()) rows.push(await loadRow(src, job, registry[job.name], now));
  return rows;
}

/** One schedule's row, or undefined when the catalog has no scheduled job of that name. */
export async function loadSchedule(src: ScheduleSource, name: string, now = new Date()): Promise<ScheduleRow | undefined> {
  const job = src.catalog.get(name);
  if (!job?.schedule) return undefined;
  return loadRow(src, job, await src.redis.hget(scheduleRegistryKey(src.prefix), name), now);
}

export async function loadHistory(src: ScheduleSource, name: string): Promise<OccurrenceRecord[]> {
  return readHistory(src.redis, src.prefix, name, HISTORY_ROWS);
}

async function loadRow(src: ScheduleSource, job: AnyJob, registration: string | null | undefined, now: Date): Promise<ScheduleRow> {
  const spec = job.schedule;
  if (!spec) throw new Error(`job "${job.name}" has no schedule`);
  const speedupMs = speedupOfRegistration(registration);
  // In fast staging mode the scheduler fires on the speed-up interval; preview and health follow it.
  const { rule, lastSuccess, lastFailure, health } = await loadScheduleState(src.redis, src.prefix, job, speedupMs, now);
  return {
    ...previewSchedule(job, { count: 5, from: now, rule }),
    registered: registration !== undefined && registration !== null,
    speedupMs,
    lastSuccess,
    lastFailure,
    health,
  };
}

