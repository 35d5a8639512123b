import { Counter, Histogram, Registry, collectDefaultMetrics } from 'prom-client';

/**
 * One Prometheus registry per process. Apps expose it on GET /metrics of their health port; counters
 * are how operators (and tests of real worker processes) see suppressed duplicates, skips and dead letters.
 */
export const metricsRegistry = new Registry();
collectDefaultMetrics({ register: metricsRegistry, prefix: 'tickwork_' });

export const jobsCompleted = new Counter({
  name: 'tickwork_jobs_completed_total',
  help: 'Handler runs that completed',
  labelNames: ['queue', 'job'] as const,
  registers: [metricsRegistry],
});

export const jobsFailed = new Counter({
  name: 'tickwork_job_attempts_failed_total',
  help: 'Handler attempts that threw (retried or final)',
  labelNames: ['queue', 'job'] as const,
  registers: [metricsRegistry],
});

export const jobsCancelled = new Counter({
  name: 'tickwork_jobs_cancelled_total',
  help: 'Runs cancelled by an operator (counted here, not as failed attempts)',
  labelNames: ['queue', 'job'] as const,
  registers: [metricsRegistry],
});

export const jobDuration = new Histogram({
  name: 'tickwork_job_duration_seconds',
  help: 'Handler run time',
  labelNames: ['queue', 'job'] as const,
  buckets: [0.005, 0.025, 0.1, 0.5, 1, 5, 30, 120, 600],
  registers: [metricsRegistry],
});

/** The `/metrics` route for startHealthServer. */
export const metricsRoute = {
  '/metrics': async () => ({ contentType: metricsRegistry.contentType, body: await metricsRegistry.metrics() }),
};
