import { logLevel, parseEnv, port, positiveInt, queuePrefix, redisUrl } from '@tickwork/runtime';
import { z } from 'zod';

const schema = z.object({
  REDIS_URL: redisUrl,
  QUEUE_PREFIX: queuePrefix,
  PORT: port(3001),
  LOG_LEVEL: logLevel,
  /** How often schedules are reconciled again after start (catches a deleted scheduler key, say). */
  RECONCILE_INTERVAL_MS: positiveInt(60_000),
  JOBS_MODULE: z.string().optional(),
});

export type SchedulerEnv = z.output<typeof schema>;

export function loadSchedulerEnv(env: Record<string, string | undefined>): SchedulerEnv {
  return parseEnv('scheduler', schema, env);
}
