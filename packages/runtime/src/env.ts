import { z } from 'zod';
import { EnvError } from './errors.js';

/**
 * Parses an app's env once at start. Every problem is reported at once, each naming its variable,
 * so a misconfigured deploy is fixed in one round trip.
 */
export function parseEnv<S extends z.ZodObject>(
  app: string,
  schema: S,
  env: Record<string, string | undefined>,
): z.output<S> {
  const result = schema.safeParse(env);
  if (result.success) return result.data;
  const problems = result.error.issues.map((issue) => {
    const variable = issue.path.map(String).join('.') || '(env)';
    const value = env[variable];
    const what = value === undefined || value === '' ? 'is not set' : 'is invalid';
    return `${variable} ${what}: ${issue.message}`;
  });
  throw new EnvError(app, problems);
}

/** Fields every app's env shares. */
export const redisUrl = z
  .string()
  .default('redis://127.0.0.1:6379')
  .refine((v) => /^rediss?:\/\//.test(v), 'must be a redis:// or rediss:// URL, e.g. redis://127.0.0.1:6379');

/** A PostgreSQL URL (may carry a password: log it only through safeUrl). */
export const databaseUrl = z
  .string()
  .refine((v) => /^postgres(ql)?:\/\//.test(v), 'must be a postgres:// or postgresql:// URL, e.g. postgres://app:secret@db:5432/app');

export const port = (fallback: number) =>
  z.coerce.number().int().min(0).max(65535).default(fallback);

export const logLevel = z
  .enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'])
  .default('info');

export const queuePrefix = z
  .string()
  .default('tickwork')
  .describe('Redis key prefix for every queue; use a {hash tag} such as {tickwork} on Redis Cluster');

export const positiveInt = (fallback: number) => z.coerce.number().int().positive().default(fallback);

/** POST target for alerts. May carry a token: it is never logged in full. */
export const alertWebhookUrl = z
  .url({ protocol: /^https?$/, error: 'must be an http(s) URL, e.g. https://hooks.example.com/T0/B0/x' })
  .optional();
