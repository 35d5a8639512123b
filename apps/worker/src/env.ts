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
});

export type WorkerEnv = z.output<typeof schema>;

export function loadWorkerEnv(env: Record<string, string | undefined>): WorkerEnv {
  return parseEnv('worker', schema, env);
}
