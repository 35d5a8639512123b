import { logLevel, parseEnv, port, queuePrefix, redisEnv } from '@tickwork/core';
import { z } from 'zod';

const schema = z.object({
  ...redisEnv,
  QUEUE_PREFIX: queuePrefix,
  LOG_LEVEL: logLevel('warn'),
  JOBS_MODULE: z.string().optional(),
  /** Only read by `tickwork db`: the PostgreSQL to migrate (`--url` overrides it). */
  DATABASE_URL: z.string().optional(),
  /** Only read by `tickwork dev`, which passes it to the dashboard it starts. */
  DASHBOARD_PASSWORD: z.string().optional(),
  /** Only read by `tickwork dev`: the dashboard's port (PORT would apply to every app it starts). */
  DASHBOARD_PORT: port(3000),
});

export type CliEnv = z.output<typeof schema>;

export function loadCliEnv(env: Record<string, string | undefined>): CliEnv {
  return parseEnv('tickwork', schema, env);
}
