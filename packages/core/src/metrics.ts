import { Counter, Histogram, Registry, collectDefaultMetrics } from 'prom-client';

/**
 * One Prometheus registry per process. Apps expose it on GET /metrics of their health port; counters
 * are how operators (and tests of real worker processes) see suppressed duplicates, skips and dead letters.
 */
export const metricsRegistry = new Registry();
collectDefaultMetrics({ register: metricsRegistry, prefix: 'tickwork_' });

/**
 * The worker's metrics of every run (completed, failed, duration), one JobTally per queue and job name:
 * plain numbers a run adds to, handed to prom-client when it collects (a scrape). prom-client validates and
 * hashes a child's labels on every call, and its histogram copies them into a new object per observation:
 * about 1 µs of Node CPU per job for these three, the largest single cost of a no-op run's bookkeeping in a
 * CPU profile.
 */
export interface JobTally {
  readonly labels: { queue: string; job: string };
  completed(): void;
  failed(): void;
  /** A run's handler time, in seconds. */
  observe(seconds: number): void;
}

const DURATION_BUCKETS = [0.005, 0.025, 0.1, 0.5, 1, 5, 30, 120, 600];

class Tally implements JobTally {
  /** Completed and failed runs not yet handed to their counters. */
  completedSince = 0;
  failedSince = 0;
  /** Runs per duration bucket (not cumulative), the last one past every bound; their total time. */
  readonly inBucket = new Array<number>(DURATION_BUCKETS.length + 1).fill(0);
  sum = 0;
  count = 0;

  constructor(readonly labels: { queue: string; job: string }) {}

  completed(): void {
    this.completedSince++;
  }

  failed(): void {
    this.failedSince++;
  }

  observe(seconds: number): void {
    let i = 0;
    while (i < DURATION_BUCKETS.length && seconds > (DURATION_BUCKETS[i] as number)) i++;
    this.inBucket[i] = (this.inBucket[i] as number) + 1;
    this.sum += seconds;
    this.count++;
  }
}

const tallies = new Map<string, Map<string, Tally>>();

/** The tally of runs of `job` on `queue`, made on first use and kept (one per job name the catalog has). */
export function jobTally(queue: string, job: string): JobTally {
  let byJob = tallies.get(queue);
  if (!byJob) tallies.set(queue, (byJob = new Map()));
  let t = byJob.get(job);
  if (!t) byJob.set(job, (t = new Tally({ queue, job })));
  return t;
}

function* allTallies(): Generator<Tally> {
  for (const byJob of tallies.values()) yield* byJob.values();
}

export const jobsCompleted = new Counter({
  name: 'tickwork_jobs_completed_total',
  help: 'Handler runs that completed',
  labelNames: ['queue', 'job'] as const,
  registers: [metricsRegistry],
  collect() {
    for (const t of allTallies()) if (t.completedSince > 0) this.inc(t.labels, t.completedSince), (t.completedSince = 0);
  },
});

export const jobsFailed = new Counter({
  name: 'tickwork_job_attempts_failed_total',
  help: 'Handler attempts that threw (retried or final)',
  labelNames: ['queue', 'job'] as const,
  registers: [metricsRegistry],
  collect() {
    for (const t of allTallies()) if (t.failedSince > 0) this.inc(t.labels, t.failedSince), (t.failedSince = 0);
  },
});

export const jobsCancelled = new Counter({
  name: 'tickwork_jobs_cancelled_total',
  help: 'Runs cancelled by an operator (counted here, not as failed attempts)',
  labelNames: ['queue', 'job'] as const,
  registers: [metricsRegistry],
});

/** The worker's consumer watchdog (apps/worker/src/consumer-watchdog.ts): each heal of a queue's consumer. */
export const watchdogHeals = new Counter({
  name: 'tickwork_worker_watchdog_heals_total',
  help: 'Times a consumer with free slots left its queue\'s waiting jobs untaken for WORKER_WATCHDOG_MS and had its connections renewed',
  labelNames: ['queue'] as const,
  registers: [metricsRegistry],
});

/** The worker's Redis restart watch (apps/worker/src/redis-restarts.ts): each restart it saw, its running runs handed back. */
export const redisRestarts = new Counter({
  name: 'tickwork_worker_redis_restarts_total',
  help: 'Times the worker reconnected to a Redis that had restarted (a new run_id) and handed its running runs back to run again from the ledger',
  registers: [metricsRegistry],
});

type Exported = Awaited<ReturnType<Histogram['get']>>;
const DURATION_NAME = 'tickwork_job_duration_seconds';
const DURATION_HELP = 'Handler run time';

/**
 * The duration histogram, exported from the tallies: the same series prom-client's Histogram writes (per
 * label set, cumulative `_bucket`s with `le`, `+Inf`, `_sum`, `_count`: metrics.test.ts compares the two).
 * Nothing calls its `observe`; runs add to their JobTally.
 */
class TalliedHistogram extends Histogram<'queue' | 'job'> {
  override async get(): Promise<Exported> {
    return this.exported();
  }

  /** What the registry asks a Histogram for when it writes the text format (not in prom-client's types). */
  async getForPromString(): Promise<Exported> {
    return this.exported();
  }

  override reset(): void {
    for (const t of allTallies()) t.inBucket.fill(0), (t.sum = 0), (t.count = 0);
  }

  private exported(): Exported {
    const name = DURATION_NAME;
    const values: { labels: Record<string, string | number>; value: number; metricName: string }[] = [];
    for (const t of allTallies()) {
      if (t.count === 0) continue;
      let acc = 0;
      DURATION_BUCKETS.forEach((le, i) => {
        acc += t.inBucket[i] as number;
        values.push({ labels: { le, ...t.labels }, value: acc, metricName: `${name}_bucket` });
      });
      values.push({ labels: { le: '+Inf', ...t.labels }, value: t.count, metricName: `${name}_bucket` });
      values.push({ labels: { ...t.labels }, value: t.sum, metricName: `${name}_sum` });
      values.push({ labels: { ...t.labels }, value: t.count, metricName: `${name}_count` });
    }
    return { name, help: DURATION_HELP, type: 'histogram', aggregator: 'sum', values } as unknown as Exported;
  }
}

export const jobDuration = new TalliedHistogram({
  name: DURATION_NAME,
  help: DURATION_HELP,
  labelNames: ['queue', 'job'] as const,
  buckets: DURATION_BUCKETS,
  registers: [metricsRegistry],
});

/** The `/metrics` route for startHealthServer. */
export const metricsRoute = {
  '/metrics': async () => ({ contentType: metricsRegistry.contentType, body: await metricsRegistry.metrics() }),
};
