import { Counter, Gauge, Histogram } from 'prom-client';
import { metricsRegistry } from '@tickwork/core';

/** Set by the scheduler's watchdog on every pass. */
export const scheduleHealthy = new Gauge({
  name: 'tickwork_schedule_healthy',
  help: 'Per schedule: 1 when ok or waiting for its first run, 0 when stale or failing (as of the last watchdog pass)',
  labelNames: ['schedule'] as const,
  registers: [metricsRegistry],
});

/**
 * A Prometheus-side dead-man's switch that works even when every scheduler is down: alert on
 * `time() - tickwork_schedule_last_success_timestamp_seconds` growing too large.
 */
export const scheduleLastSuccess = new Gauge({
  name: 'tickwork_schedule_last_success_timestamp_seconds',
  help: 'Per schedule: when its last successful run ended (Unix seconds; 0 when it never succeeded)',
  labelNames: ['schedule'] as const,
  registers: [metricsRegistry],
});

export const scheduleSlowRuns = new Gauge({
  name: 'tickwork_schedule_slow_runs',
  help: "Per schedule: runs in progress for longer than the schedule's slowAfter (as of the last watchdog pass)",
  labelNames: ['schedule'] as const,
  registers: [metricsRegistry],
});

/** The dispatcher's work (scheduler). */
export const occurrencesDispatched = new Counter({
  name: 'tickwork_schedule_occurrences_total',
  help: 'Occurrences the dispatcher dealt with, by action: enqueued (on time), caught-up, missed, skipped-paused',
  labelNames: ['action'] as const,
  registers: [metricsRegistry],
});

export const claimBatchSize = new Histogram({
  name: 'tickwork_schedule_claim_batch_size',
  help: 'Due entries claimed per dispatcher tick (all shards)',
  buckets: [0, 1, 10, 50, 100, 500, 1000, 5000],
  registers: [metricsRegistry],
});

export const dueBacklogGauge = new Gauge({
  name: 'tickwork_schedule_due_backlog',
  help: 'Due entries whose time has come and that no dispatcher has claimed yet (all shards)',
  registers: [metricsRegistry],
});

export const dueLagGauge = new Gauge({
  name: 'tickwork_schedule_due_lag_seconds',
  help: 'now minus the oldest due score (0 when nothing is overdue): how far behind the dispatchers are',
  registers: [metricsRegistry],
});

export const headStartGauge = new Gauge({
  name: 'tickwork_schedule_head_start_seconds',
  help: 'How long before its time this scheduler adds an on-time occurrence: SCHEDULE_HEAD_START_MS, or 0 while a worker that does not hold early occurrences is registered',
  registers: [metricsRegistry],
});

/** The scheduler registry (dispatch/takeover.ts): dead replicas whose claims this scheduler released. */
export const schedulerTakeovers = new Counter({
  name: 'tickwork_scheduler_takeovers_total',
  help: 'Scheduler replicas found silent past SCHEDULER_DEAD_AFTER_MS whose claims this scheduler released to the live ones',
  registers: [metricsRegistry],
});

export const claimsTakenOver = new Counter({
  name: 'tickwork_schedule_claims_taken_over_total',
  help: 'Claims this scheduler took over from a replica that died holding them (released by the registry, or lease expired)',
  registers: [metricsRegistry],
});
