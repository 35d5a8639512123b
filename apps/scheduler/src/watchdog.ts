import {
  loadScheduleState,
  scheduleHealthy,
  scheduleLastSuccess,
  type Alerter,
  type Catalog,
  type HealthStatus,
  type Logger,
} from '@tickwork/runtime';
import type { Redis } from 'ioredis';

/**
 * The schedule watchdog, tickwork's dead-man's switch. Every interval it judges each schedule's health the
 * way the dashboard does (scheduleHealth: no success within two intervals is `stale`) and alerts when one
 * goes stale and again when it recovers. A silent failure — the scheduler or every worker down, runs
 * skipped or lost — produces no dead letter; this is what notices it.
 *
 * Any number of scheduler replicas run it. The last judged status of each schedule lives in Redis and is
 * swapped atomically, so only the replica that changes it alerts: one alert per transition.
 *
 * Each pass also sets the gauges `tickwork_schedule_healthy` and `tickwork_schedule_last_success_timestamp_seconds`.
 */

/** HSET only when the value changes; returns the previous value ('' if none) and whether this call changed it. */
const SWAP = `
local old = redis.call('HGET', KEYS[1], ARGV[1])
if old == ARGV[2] then return {0, old} end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
return {1, old or ''}
`;

export const watchdogStatusKey = (prefix: string) => `${prefix}:meta:schedule-health`;

export interface WatchdogDeps {
  catalog: Catalog;
  redis: Redis;
  prefix: string;
  log: Logger;
  alerter: Pick<Alerter, 'scheduleHealth'>;
  /** The fast staging interval in force (SCHEDULE_SPEEDUP): schedules are judged against it. */
  speedupMs?: number | undefined;
}

/** One watchdog pass over every schedule of the catalog. */
export async function watchSchedules(deps: WatchdogDeps, now = new Date()): Promise<void> {
  for (const job of deps.catalog.scheduled()) {
    try {
      const { lastSuccess, health } = await loadScheduleState(deps.redis, deps.prefix, job, deps.speedupMs, now);
      const lastSuccessAt = lastSuccess ? (lastSuccess.endedAt ?? lastSuccess.nominal) : null;
      scheduleHealthy.set({ schedule: job.name }, health.status === 'stale' || health.status === 'failing' ? 0 : 1);
      scheduleLastSuccess.set({ schedule: job.name }, lastSuccessAt ? Date.parse(lastSuccessAt) / 1000 : 0);

      const [changed, previous] = (await deps.redis.eval(SWAP, 1, watchdogStatusKey(deps.prefix), job.name, health.status)) as [number, string];
      if (changed !== 1) continue;
      const from = (previous || null) as HealthStatus | null;
      const base = { schedule: job.name, queue: job.queue, reason: health.reason, lastSuccessAt, lastExpectedAt: health.lastExpected };
      if (health.status === 'stale') {
        deps.alerter.scheduleHealth({
          type: 'schedule_stale',
          ...base,
          message: `schedule "${job.name}" has not succeeded within two intervals: ${health.reason}`,
        });
      } else if (from === 'stale') {
        deps.alerter.scheduleHealth({
          type: 'schedule_recovered',
          ...base,
          message: `schedule "${job.name}" is ${health.status} again`,
        });
      } else {
        deps.log.info({ schedule: job.name, from, to: health.status }, 'schedule health changed');
      }
    } catch (err) {
      deps.log.warn({ err: { message: (err as Error).message }, schedule: job.name }, 'schedule watchdog could not judge the schedule; will retry');
    }
  }
}
