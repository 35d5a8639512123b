import { loadScheduleState, readHistory, scheduleHealthy, scheduleLastSuccess, scheduleSlowRuns, slowAfterMsOf, type HealthStatus, type ScheduleHealth } from '@tickwork/schedules';
import { occurrenceKey, policiesOf, type AnyJob, type Catalog, type Logger, type RedisClient } from '@tickwork/core';
import { swapStatus, type Alerter } from '@tickwork/operations';

/**
 * The schedule watchdog, tickwork's dead-man's switch. Every interval it judges each schedule's health the
 * way the dashboard does (scheduleHealth: no success within two intervals is `stale`) and alerts when one
 * goes stale and again when it recovers. A silent failure — the scheduler or every worker down, runs
 * skipped or lost — produces no dead letter; this is what notices it.
 *
 * Any number of scheduler replicas run it. The last judged status of each schedule lives in Redis and is
 * swapped atomically, so only the replica that changes it alerts: one alert per transition.
 *
 * It also alerts once per occurrence on a run still going after the schedule's `slowAfter` (default: its
 * interval, at least a minute), the first sign of a run that hangs or will collide with the next one.
 *
 * Each pass also sets the gauges `tickwork_schedule_slow_runs`, `tickwork_schedule_healthy` and `tickwork_schedule_last_success_timestamp_seconds`.
 */

export const watchdogStatusKey = (prefix: string) => `${prefix}:meta:schedule-health`;
const staleAlertedKey = (prefix: string) => `${prefix}:meta:schedule-stale-alerted`;
const slowAlertedKey = (prefix: string, occurrence: string) => `${prefix}:meta:slow-run-alerted:${occurrence}`;

/** How many of the newest occurrences are looked at for runs in progress. */
const SLOW_RUN_SCAN = 20;

export interface WatchdogDeps {
  catalog: Catalog;
  redis: RedisClient;
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

      const { changed, previous } = await swapStatus(deps.redis, watchdogStatusKey(deps.prefix), job.name, health.status);
      if (changed) await alertTransition(deps, job, health, previous as HealthStatus | null, lastSuccessAt);
      await watchSlowRuns(deps, job, health.intervalMs, now);
    } catch (err) {
      deps.log.warn({ err: { message: (err as Error).message }, schedule: job.name }, 'schedule watchdog could not judge the schedule; will retry');
    }
  }
}

/**
 * Into stale: alert, and remember that it was alerted. Back to ok (or waiting): the all-clear, once, for the
 * replica whose HDEL removes that mark; a stale schedule whose next run fails stays un-cleared until one
 * succeeds. Other changes (waiting to ok, ok to failing: failures alert through the DLQ) are only logged.
 */
async function alertTransition(
  deps: WatchdogDeps,
  job: AnyJob,
  health: ScheduleHealth,
  from: HealthStatus | null,
  lastSuccessAt: string | null,
): Promise<void> {
  const base = { schedule: job.name, queue: job.queue, reason: health.reason, lastSuccessAt, lastExpectedAt: health.lastExpected };
  if (health.status === 'stale') {
    await deps.redis.hset(staleAlertedKey(deps.prefix), job.name, new Date().toISOString());
    deps.alerter.scheduleHealth({
      type: 'schedule_stale',
      ...base,
      message: `schedule "${job.name}" has not succeeded within two intervals: ${health.reason}`,
    });
  } else if ((health.status === 'ok' || health.status === 'waiting') && (await deps.redis.hdel(staleAlertedKey(deps.prefix), job.name)) === 1) {
    deps.alerter.scheduleHealth({ type: 'schedule_recovered', ...base, message: `schedule "${job.name}" is ${health.status} again` });
  } else {
    deps.log.info({ schedule: job.name, from, to: health.status }, 'schedule health changed');
  }
}

/** Runs in progress longer than the schedule allows: counted in the gauge, alerted once each (SET NX across replicas). */
async function watchSlowRuns(deps: WatchdogDeps, job: AnyJob, intervalMs: number | null, now: Date): Promise<void> {
  const spec = job.schedule;
  if (!spec) return;
  const slowAfterMs = slowAfterMsOf(policiesOf(job.name, spec), intervalMs);
  const running = (await readHistory(deps.redis, deps.prefix, job.name, SLOW_RUN_SCAN)).filter((r) => r.startedAt && !r.endedAt);
  let slow = 0;
  for (const r of running) {
    const runningForMs = now.getTime() - Date.parse(r.startedAt as string);
    if (runningForMs <= slowAfterMs) continue;
    slow++;
    const occurrence = r.id ?? occurrenceKey(job.name, new Date(r.nominal));
    const first = await deps.redis.set(slowAlertedKey(deps.prefix, occurrence), '1', 'PX', 7 * 24 * 3600_000, 'NX');
    if (first !== 'OK') continue;
    deps.alerter.scheduleHealth({
      type: 'schedule_slow_run',
      schedule: job.name,
      queue: job.queue,
      occurrence,
      nominal: r.nominal,
      startedAt: r.startedAt as string,
      runningForMs,
      slowAfterMs,
      message: `a run of schedule "${job.name}" (due ${r.nominal}) has been running for ${Math.round(runningForMs / 1000)} s, longer than ${Math.round(slowAfterMs / 1000)} s`,
    });
  }
  scheduleSlowRuns.set({ schedule: job.name }, slow);
}
