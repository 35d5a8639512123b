import { logLevel, parseEnv, port, queuePrefix, redisUrl } from '@tickwork/runtime';
import { z } from 'zod';

const schema = z.object({
  REDIS_URL: redisUrl,
  QUEUE_PREFIX: queuePrefix,
  PORT: port(3000),
  LOG_LEVEL: logLevel,
  DASHBOARD_USER: z.string().min(1).default('admin'),
  // No default: the dashboard can retry and delete jobs, so it never starts open.
  DASHBOARD_PASSWORD: z
    .string({ error: 'set DASHBOARD_PASSWORD to the password for HTTP Basic login (at least 8 characters)' })
    .min(8, 'DASHBOARD_PASSWORD must be at least 8 characters'),
  JOBS_MODULE: z.string().optional(),
});

export type DashboardEnv = z.output<typeof schema>;

export function loadDashboardEnv(env: Record<string, string | undefined>): DashboardEnv {
  return parseEnv('dashboard', schema, env);
}
