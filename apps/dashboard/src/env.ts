import { logLevel, parseEnv, port, queuePrefix, redisStartupTimeoutMs, redisUrl } from '@tickwork/runtime';
import { z } from 'zod';

const schema = z.object({
  REDIS_URL: redisUrl,
  REDIS_STARTUP_TIMEOUT_MS: redisStartupTimeoutMs,
  QUEUE_PREFIX: queuePrefix,
  PORT: port(3000),
  LOG_LEVEL: logLevel,
  DASHBOARD_USER: z.string().min(1).default('admin'),
  // No default: the dashboard can retry and delete jobs, so it never starts open.
  DASHBOARD_PASSWORD: z
    .string({ error: 'set DASHBOARD_PASSWORD to the password for HTTP Basic login (at least 8 characters)' })
    .min(8, 'DASHBOARD_PASSWORD must be at least 8 characters')
    // Eight spaces are eight characters and no password.
    .refine((v) => v.trim().length >= 8, 'DASHBOARD_PASSWORD must have at least 8 characters besides leading and trailing spaces'),
  JOBS_MODULE: z.string().optional(),
});

export type DashboardEnv = z.output<typeof schema>;

export function loadDashboardEnv(env: Record<string, string | undefined>): DashboardEnv {
  return parseEnv('dashboard', schema, env);
}
