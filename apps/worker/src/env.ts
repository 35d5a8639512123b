import { alertWebhookUrl, choice, databaseUrl, EnvError, logLevel, metricsToken, parseEnv, port, positiveInt, queuePrefix, redisStartupTimeoutMs, redisEnv, wholeNumber, type Catalog } from '@tickwork/core';
import { z } from 'zod';

const schema = z.object({
  ...redisEnv,
  REDIS_STARTUP_TIMEOUT_MS: redisStartupTimeoutMs,
  QUEUE_PREFIX: queuePrefix,
  PORT: port(3002),
  METRICS_TOKEN: metricsToken,
  LOG_LEVEL: logLevel(),
  /** Jobs run at once per queue; at most 1000 (each holds memory and a share of the event loop). */
  WORKER_CONCURRENCY: positiveInt(10, 1000),
  /** How long SIGTERM waits for active jobs before aborting them. Keep below the orchestrator's grace period. */
  DRAIN_TIMEOUT_MS: positiveInt(25_000),
  /** Only run these queues (comma-separated); default all queues of the catalog. */
  WORKER_QUEUES: z.string().optional(),
  JOBS_MODULE: z.string().optional(),
  /** POST target for alerts (dead letters, escalations). May carry a token: it is never logged in full. */
  ALERT_WEBHOOK_URL: alertWebhookUrl,
  /** Consecutive failed runs of one schedule that trigger one escalated alert. */
  ALERT_ESCALATE_AFTER: positiveInt(3),
  ALERT_WEBHOOK_TIMEOUT_MS: positiveInt(5000),
  /** How often failed sets are swept for final failures whose DLQ move was interrupted. */
  DLQ_SWEEP_INTERVAL_MS: positiveInt(30_000),
  /** Largest payload ctx.enqueue accepts (bytes of JSON). */
  MAX_PAYLOAD_BYTES: positiveInt(512 * 1024),
  /** Lock/stall tuning, BullMQ defaults otherwise; a job stalled more than WORKER_MAX_STALLED_COUNT times is dead-lettered. */
  /** Also the idempotency-ledger lease. Both are BullMQ's fallback: a crashed worker's jobs come back through the heartbeat below first. */
  WORKER_LOCK_DURATION_MS: positiveInt(30_000),
  WORKER_STALLED_INTERVAL_MS: positiveInt(30_000),
  WORKER_MAX_STALLED_COUNT: wholeNumber(2, { min: 0, format: 'must be a whole number, 0 or more' }),
  /**
   * Recovery after a crash: every process beats this often, and one silent for WORKER_DEAD_AFTER_MS counts
   * as dead: its jobs go back to the queue and its runs' leases are taken over (README, Recovery after a crash).
   */
  WORKER_HEARTBEAT_MS: positiveInt(1000),
  /**
   * The consumer watchdog (consumer-watchdog.ts): a consumer with free slots that leaves its queue's waiting
   * jobs untaken this long has its Redis connections renewed (logged, counted); 0 turns it off.
   */
  WORKER_WATCHDOG_MS: wholeNumber(3000, { min: 0, format: 'must be a whole number of milliseconds, 0 (off) or more, written as digits' }),
  WORKER_DEAD_AFTER_MS: positiveInt(5000),
  /**
   * A batch job's batch holds a lease this long, renewed every quarter of it while the batch runs; a batch
   * whose worker died is put back within about 1.25 times this (README, Batch jobs).
   */
  WORKER_BATCH_LEASE_MS: positiveInt(8000),
  /**
   * `auto`: tickwork's fast paths into BullMQ when the installed BullMQ matches the engine's contract (else its
   * public paths, with a warning); `off`: BullMQ's public paths only (docs/upgrading-bullmq.md).
   */
  WORKER_BULLMQ_FAST_PATH: choice(['auto', 'off'], 'auto'),
  /** How long a completed run with an explicit key (idempotencyKey, occurrence, re-drive) suppresses duplicates. */
  IDEMPOTENCY_RETENTION_HOURS: positiveInt(24),
  /**
   * How long a done run with a key of its own keeps its full record (with its result) before it is compacted
   * to a fingerprint for the rest of its window (docs/exactly-once.md, How long duplicates are suppressed).
   */
  IDEMPOTENCY_FULL_RECORD_SECONDS: positiveInt(300),
  /** How long a failed or interrupted run keeps its record and step results (a re-drive within it resumes). */
  IDEMPOTENCY_UNFINISHED_RETENTION_HOURS: positiveInt(7 * 24),
  /**
   * Same meaning and default as the scheduler's: an occurrence starting later than this after its time
   * (workers were down) is judged by its schedule's missed-run policy instead of simply run.
   */
  SCHEDULE_GRACE_MS: positiveInt(60_000),
  /** PostgreSQL holding tickwork_outbox: when set, this worker relays committed outbox rows to BullMQ. */
  OUTBOX_DATABASE_URL: databaseUrl.optional(),
  /** How often the outbox relay looks for rows when the last pass found none. */
  OUTBOX_RELAY_INTERVAL_MS: positiveInt(1000),
  /**
   * The dashboard's charts: `on` counts every attempt per queue (and catalog schedule) in memory and writes
   * the counts every CHART_HISTORY_FLUSH_MS, one script call per queue (docs/dashboard.md, Charts); `off` counts nothing.
   */
  CHART_HISTORY: choice(['on', 'off'], 'on'),
  CHART_HISTORY_FLUSH_MS: positiveInt(5000),
}).refine((env) => env.WORKER_DEAD_AFTER_MS >= 3 * env.WORKER_HEARTBEAT_MS, {
  path: ['WORKER_DEAD_AFTER_MS'],
  message: 'must be at least 3 times WORKER_HEARTBEAT_MS: a late beat must not look like a death',
});

export type WorkerEnv = z.output<typeof schema>;

export function loadWorkerEnv(env: Record<string, string | undefined>): WorkerEnv {
  return parseEnv('worker', schema, env);
}

/**
 * The queues WORKER_QUEUES names (default: all of the catalog's). A name the catalog does not know is an
 * error naming the known ones: a typo would otherwise leave the worker serving nothing, silently.
 */
export function selectedQueues(env: Pick<WorkerEnv, 'WORKER_QUEUES'>, catalog: Catalog): string[] {
  const named = env.WORKER_QUEUES?.split(',').map((q) => q.trim()).filter(Boolean) ?? [];
  if (named.length === 0) return [...catalog.queues];
  const unknown = named.filter((q) => !catalog.queues.includes(q));
  if (unknown.length > 0) {
    throw new EnvError('worker', [`WORKER_QUEUES is invalid: no queue ${unknown.map((q) => `"${q}"`).join(', ')} in the catalog; known queues: ${catalog.queues.join(', ')}`]);
  }
  return named;
}
