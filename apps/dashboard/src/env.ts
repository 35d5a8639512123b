import { blankAsUnset, logLevel, parseEnv, port, queuePrefix, redisStartupTimeoutMs, redisEnv } from '@tickwork/core';
import { z } from 'zod';
import { parseTrustedProxies, TrustedProxiesError } from './client-address.js';
import { parseUsers, plainAdmin, UsersConfigError, type DashboardUser } from './users.js';

const schema = z
  .object({
    ...redisEnv,
    REDIS_STARTUP_TIMEOUT_MS: redisStartupTimeoutMs,
    QUEUE_PREFIX: queuePrefix,
    PORT: port(3000),
    LOG_LEVEL: logLevel(),
    DASHBOARD_USER: z.string().regex(/^[A-Za-z0-9._@-]{1,64}$/, 'must be 1 to 64 letters, digits or . _ @ -').default('admin'),
    DASHBOARD_PASSWORD: z
      .string()
      .min(8, 'DASHBOARD_PASSWORD must be at least 8 characters')
      // Eight spaces are eight characters and no password.
      .refine((v) => v.trim().length >= 8, 'DASHBOARD_PASSWORD must have at least 8 characters besides leading and trailing spaces')
      .optional(),
    /** `name:role:password-hash` entries (users.ts); the hash is never echoed in an error. Blank counts as unset (compose passes `${DASHBOARD_USERS:-}`). */
    DASHBOARD_USERS: z.preprocess(
      blankAsUnset,
      z
        .string()
        .transform((raw, ctx) => {
          try {
            return parseUsers(raw);
          } catch (err) {
            if (!(err instanceof UsersConfigError)) throw err;
            ctx.addIssue({ code: 'custom', message: err.message });
            return z.NEVER;
          }
        })
        .optional(),
    ),
    /** Reverse proxies whose X-Forwarded-For is believed (client-address.ts); unset: none. */
    DASHBOARD_TRUSTED_PROXIES: z.preprocess(
      blankAsUnset,
      z
        .string()
        .transform((raw, ctx) => {
          try {
            return parseTrustedProxies(raw);
          } catch (err) {
            if (!(err instanceof TrustedProxiesError)) throw err;
            ctx.addIssue({ code: 'custom', message: err.message });
            return z.NEVER;
          }
        })
        .optional(),
    ),
    JOBS_MODULE: z.string().optional(),
  })
  .superRefine((env, ctx) => {
    // No default password: the dashboard can retry and delete jobs, so it never starts open.
    if (env.DASHBOARD_PASSWORD === undefined && (env.DASHBOARD_USERS ?? []).length === 0) {
      ctx.addIssue({
        code: 'custom',
        path: ['DASHBOARD_PASSWORD'],
        message: 'set DASHBOARD_PASSWORD (the password of the admin DASHBOARD_USER, at least 8 characters) or DASHBOARD_USERS (name:role:password-hash entries)',
      });
    }
    if (env.DASHBOARD_PASSWORD !== undefined && env.DASHBOARD_USERS?.some((u) => u.name === env.DASHBOARD_USER)) {
      ctx.addIssue({
        code: 'custom',
        path: ['DASHBOARD_USERS'],
        message: `user "${env.DASHBOARD_USER}" is both DASHBOARD_USER (with DASHBOARD_PASSWORD) and in DASHBOARD_USERS; a user name may appear once`,
      });
    }
  });

export type DashboardEnv = z.output<typeof schema>;

export function loadDashboardEnv(env: Record<string, string | undefined>): DashboardEnv {
  return parseEnv('dashboard', schema, env);
}

/** Everyone who may log in: the DASHBOARD_USER/DASHBOARD_PASSWORD admin (when set) and DASHBOARD_USERS. */
export function dashboardUsers(env: DashboardEnv): DashboardUser[] {
  return [...(env.DASHBOARD_PASSWORD !== undefined ? [plainAdmin(env.DASHBOARD_USER, env.DASHBOARD_PASSWORD)] : []), ...(env.DASHBOARD_USERS ?? [])];
}
