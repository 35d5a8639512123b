import type { RedisClient } from '@tickwork/core';
import type { Catalog } from '@tickwork/core';
import type { AnyJob } from '@tickwork/core';
import { speedupOfRegistration } from '../rules/effective-rule.js';
import { loadScheduleState, type ScheduleHealth } from './health.js';
import type { OccurrenceRecord } from '../history/history.js';
import { scheduleRegistryKey } from '../keys.js';
import { previewSchedule, type SchedulePreview } from '../rules/preview.js';

/** A schedule as the dashboard and `tickwork schedules` show it. */
export interface ScheduleOverview extends SchedulePreview {
  /** Whether a scheduler has registered it in Redis (reconcile writes the registry). */
  registered: boolean;
  /** Set when the registered scheduler runs in fast staging mode (SCHEDULE_SPEEDUP): the real interval. */
  speedupMs: number | null;
  lastSuccess: OccurrenceRecord | null;
  lastFailure: OccurrenceRecord | null;
  health: ScheduleHealth;
}

export interface OverviewOptions {
  /** Health is judged at `now`. */
  now?: Date;
  /** Fire times listed (default 5), from `from` (default `now`). */
  count?: number;
  from?: Date;
}

/** Every scheduled job of the catalog with its registration, last outcomes, health and next fire times. */
export async function loadScheduleOverviews(redis: RedisClient, prefix: string, catalog: Catalog, opts: OverviewOptions = {}): Promise<ScheduleOverview[]> {
  const registry = await redis.hgetall(scheduleRegistryKey(prefix));
  const rows: ScheduleOverview[] = [];
  for (const job of catalog.scheduled()) rows.push(await loadScheduleOverviewOf(redis, prefix, job, registry[job.name], opts));
  return rows;
}

/** One schedule's overview, or undefined when the catalog has no scheduled job of that name. */
export async function loadScheduleOverview(redis: RedisClient, prefix: string, catalog: Catalog, name: string, opts: OverviewOptions = {}): Promise<ScheduleOverview | undefined> {
  const job = catalog.get(name);
  if (!job?.schedule) return undefined;
  return loadScheduleOverviewOf(redis, prefix, job, await redis.hget(scheduleRegistryKey(prefix), name), opts);
}

async function loadScheduleOverviewOf(redis: RedisClient, prefix: string, job: AnyJob, registration: string | null | undefined, opts: OverviewOptions): Promise<ScheduleOverview> {
  const now = opts.now ?? new Date();
  const speedupMs = speedupOfRegistration(registration);
  // In fast staging mode the scheduler fires on the speed-up interval; preview and health follow it.
  const { rule, lastSuccess, lastFailure, health } = await loadScheduleState(redis, prefix, job, speedupMs, now);
  return {
    ...previewSchedule(job, { count: opts.count ?? 5, from: opts.from ?? now, rule }),
    registered: registration !== undefined && registration !== null,
    speedupMs,
    lastSuccess,
    lastFailure,
    health,
  };
}
