import { logLevel, parseEnv, port, positiveInt, queuePrefix, redisUrl } from '@tickwork/runtime';
import { z } from 'zod';

const schema = z.object({
  REDIS_URL: redisUrl,
  QUEUE_PREFIX: queuePrefix,
  PORT: port(3002),
  LOG_LEVEL: logLevel,
  WORKER_CONCURRENCY: positiveInt(10),
  /** How long SIGTERM waits for active jobs before aborting them. Keep below the orchestrator's grace period. */
  DRAIN_TIMEOUT_MS: positiveInt(25_000),
  /** Only run these queues (comma-separated); default all queues of the catalog. */
  WORKER_QUEUES: z.string().optional(),
  JOBS_MODULE: z.string().optional(),
  /**
   * BullMQ job lock and idempotency-ledger lease, renewed while a job runs: a crashed worker's jobs are
   * recovered (and their runs taken over) this long after it stopped renewing. Tests use a short value.
   */
  WORKER_LOCK_DURATION_MS: positiveInt(30_000),
  /** How often BullMQ checks for stalled jobs (those whose lock expired). */
  WORKER_STALLED_INTERVAL_MS: positiveInt(30_000),
  /** How long completed runs stay in the idempotency ledger, so later duplicates are still suppressed. */
  IDEMPOTENCY_RETENTION_HOURS: positiveInt(7 * 24),
});

export type WorkerEnv = z.output<typeof schema>;

export function loadWorkerEnv(env: Record<string, string | undefined>): WorkerEnv {
  return parseEnv('worker', schema, env);
}
