import { Gauge } from 'prom-client';
import { metricsRegistry } from '../metrics.js';

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
