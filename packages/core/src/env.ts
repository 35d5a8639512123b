import { z } from 'zod';
import { DEFAULT_CLUSTER_FAILOVER_MS, redisDatabaseOf, type RedisTarget } from './redis/connection.js';
import { DEFAULT_COMMAND_TIMEOUT_MS } from './redis/deadline.js';
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
    const what = value === undefined ? 'is not set' : value.trim() === '' ? 'is set but empty' : 'is invalid';
    return `${variable} ${what}: ${issue.message}`;
  });
  throw new EnvError(app, problems);
}

/**
 * Set but blank (empty, or spaces only) counts as unset, so its default applies: a compose file or manifest
 * passes `${VAR:-}` through as '', and z.coerce would read '' (or ' ') as 0. Every number and choice an app
 * reads goes through this (wholeNumber, decimal, choice).
 */
export const blankAsUnset = (v: unknown): unknown => (typeof v === 'string' && v.trim() === '' ? undefined : v);

/**
 * A whole number written as digits (`1e9`, `-1` and `2.5` are refused), from `min` to `max`; unset or blank:
 * `fallback`. `format` is the message for anything else; `tooBig` the one past `max` when it says more.
 */
export function wholeNumber(fallback: number, o: { min: number; max?: number; format: string; tooBig?: string }) {
  const max = o.max ?? Number.MAX_SAFE_INTEGER;
  return z.preprocess(
    blankAsUnset,
    z
      .string()
      .trim()
      .regex(/^\d+$/, o.format)
      .transform(Number)
      .pipe(z.number().int().min(o.min, o.format).max(max, o.tooBig ?? o.format))
      .default(fallback),
  );
}

/** A decimal number from `min` to `max` (digits and one point: `0.8`, `.8`); unset or blank: `fallback`. */
export function decimal(fallback: number, o: { min: number; max: number; format: string }) {
  return z.preprocess(
    blankAsUnset,
    z
      .string()
      .trim()
      .regex(/^(\d+(\.\d*)?|\.\d+)$/, o.format)
      .transform(Number)
      .pipe(z.number().min(o.min, o.format).max(o.max, o.format))
      .default(fallback),
  );
}

/** One of `values`; unset or blank: `fallback`. */
export function choice<const T extends readonly [string, ...string[]]>(values: T, fallback: T[number]) {
  return z.preprocess(blankAsUnset, z.enum(values, { error: `must be one of ${values.join(', ')}` }).default(fallback as never));
}

/** Fields every app's env shares. */
export const redisUrl = z
  .string()
  .default('redis://127.0.0.1:6379')
  .superRefine((v, ctx) => {
    if (!/^rediss?:\/\//.test(v) || !URL.canParse(v)) {
      ctx.addIssue({ code: 'custom', message: 'must be a redis:// or rediss:// URL, e.g. redis://127.0.0.1:6379' });
      return;
    }
    // ioredis reads the path as the database number; one it cannot read it would take as database 0.
    const db = redisDatabaseOf(v);
    if (typeof db === 'string') ctx.addIssue({ code: 'custom', message: db });
  });

/** A PostgreSQL URL (may carry a password: log it only through safeUrl). */
export const databaseUrl = z
  .string()
  .refine((v) => /^postgres(ql)?:\/\//.test(v), 'must be a postgres:// or postgresql:// URL, e.g. postgres://app:secret@db:5432/app');

/** A TCP port; unset or blank: the default. 0 (a random port) only when asked for explicitly. */
export const port = (fallback: number) => wholeNumber(fallback, { min: 0, max: 65535, format: 'must be a port number from 0 to 65535' });

export const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;

/** LOG_LEVEL: pino's levels; unset or blank: `fallback`. */
export const logLevel = (fallback: (typeof LOG_LEVELS)[number] = 'info') => choice(LOG_LEVELS, fallback);

/**
 * QUEUE_PREFIX: every key tickwork writes starts with it, so an empty one (or one with spaces around it,
 * a different prefix that looks the same) would put the queues somewhere no other app looks.
 */
export const queuePrefix = z
  .string()
  .default('tickwork')
  .refine((v) => v.trim() !== '', 'must not be empty: every key tickwork writes starts with it (unset: tickwork)')
  .refine((v) => v.trim() === v, 'must not start or end with spaces')
  .describe('Redis key prefix for every key tickwork writes; on Redis Cluster tickwork tags each queue itself, so no {hash tag} here');

/** A positive integer, written as digits (`1e9` is refused), optionally at most `max`; unset or blank: `fallback`. */
export const positiveInt = (fallback: number, max = Number.MAX_SAFE_INTEGER) =>
  wholeNumber(fallback, { min: 1, max, format: 'must be a positive integer, written as digits', tooBig: `must be at most ${max}` });

/** How long an app waits for Redis at start before it gives up as misconfigured. */
export const redisStartupTimeoutMs = positiveInt(10_000);

/** NODE_ENV, read the way people write it: `Production` or `production ` count as production. */
export const nodeEnv = z
  .string()
  .default('development')
  .transform((v) => v.trim().toLowerCase());

/** POST target for alerts. May carry a token: it is never logged in full. */
export const alertWebhookUrl = z
  .url({ protocol: /^https?$/, error: 'must be an http(s) URL, e.g. https://hooks.example.com/T0/B0/x' })
  .optional();

/**
 * METRICS_TOKEN: when set, `/metrics` asks for `Authorization: Bearer <token>`. Unset leaves it open (a
 * private network); set but short is refused, as a guessable token protects nothing.
 */
export const metricsToken = z
  .string()
  .min(16, 'must be at least 16 characters (e.g. openssl rand -hex 24)')
  // What a client sends in an HTTP header arrives as printable ASCII with surrounding spaces trimmed: a token
  // with spaces or other characters would never match, so even the right token would get 401.
  .regex(/^[\x21-\x7e]*$/, 'must be printable ASCII without spaces (e.g. openssl rand -hex 24): a request header carries nothing else unchanged')
  .optional();

const HOST_PORT = /^(\[[0-9a-fA-F:]+\]|[A-Za-z0-9_.-]+):(\d{1,5})$/;
const NODES_FORMAT = 'must be host:port[,host:port...], e.g. redis-0:6379,redis-1:6379';

/**
 * REDIS_CLUSTER_NODES: seed nodes of a Redis Cluster. When set, every app uses a cluster client and
 * REDIS_URL gives only the credentials and TLS (see connection.ts). Blank counts as unset, so a compose
 * file or manifest can pass `${REDIS_CLUSTER_NODES:-}` through for both setups.
 */
export const redisClusterNodes = z
  .string()
  .optional()
  .transform((raw, ctx) => {
    if (raw === undefined || raw.trim() === '') return undefined;
    const parts = raw.split(',').map((p) => p.trim());
    const nodes: { host: string; port: number }[] = [];
    for (const part of parts) {
      const m = HOST_PORT.exec(part);
      const port = Number(m?.[2]);
      if (!m || port < 1 || port > 65535) {
        ctx.addIssue({ code: 'custom', message: `${NODES_FORMAT} (${JSON.stringify(part)} is not host:port)` });
        return z.NEVER;
      }
      nodes.push({ host: (m[1] as string).replace(/^\[|\]$/g, ''), port });
    }
    return nodes;
  });

/** REDIS_CLUSTER_FAILOVER_MS: how long a command rides out a master's failover (see clusterOptions). */
export const redisClusterFailoverMs = positiveInt(DEFAULT_CLUSTER_FAILOVER_MS);

/**
 * REDIS_COMMAND_TIMEOUT_MS: how long a reply is awaited on one socket before the socket counts as dead and
 * is dropped (redis/deadline.ts); 0 turns the deadline off. Blocking waits (a worker's BZPOPMIN) are exempt.
 */
export const redisCommandTimeoutMs = wholeNumber(DEFAULT_COMMAND_TIMEOUT_MS, {
  min: 0,
  max: 600_000,
  format: 'must be a whole number of milliseconds from 0 (off) to 600000, written as digits',
});

/** The Redis variables every app reads: one Redis (REDIS_URL) or a cluster (REDIS_CLUSTER_NODES). */
export const redisEnv = {
  REDIS_URL: redisUrl,
  REDIS_CLUSTER_NODES: redisClusterNodes,
  REDIS_CLUSTER_FAILOVER_MS: redisClusterFailoverMs,
  REDIS_COMMAND_TIMEOUT_MS: redisCommandTimeoutMs,
};

export interface RedisEnv {
  REDIS_URL: string;
  REDIS_CLUSTER_NODES?: { host: string; port: number }[] | undefined;
  REDIS_CLUSTER_FAILOVER_MS?: number | undefined;
  REDIS_COMMAND_TIMEOUT_MS?: number | undefined;
  QUEUE_PREFIX: string;
}

/**
 * Where `app` finds Redis. On a cluster, QUEUE_PREFIX must carry no hash tag: tickwork gives each queue
 * its own (`<prefix>:{<queue>}`), and a tag in the prefix would put every queue on one slot, or be
 * ignored in favour of it (Redis hashes the first {...} of a key only). A cluster has database 0 only, so a
 * REDIS_URL naming another is refused rather than ignored.
 */
export function redisTargetOf(app: string, env: RedisEnv): RedisTarget {
  if (env.REDIS_CLUSTER_NODES === undefined) return env.REDIS_URL;
  const db = redisDatabaseOf(env.REDIS_URL);
  if (db !== 0) {
    throw new EnvError(app, [
      `REDIS_URL is invalid: ${typeof db === 'number' ? `database ${db}` : 'its database'} refused with REDIS_CLUSTER_NODES: a Redis Cluster has database 0 only; drop the path from REDIS_URL`,
    ]);
  }
  if (/[{}]/.test(env.QUEUE_PREFIX)) {
    throw new EnvError(app, [
      `QUEUE_PREFIX is invalid: ${JSON.stringify(env.QUEUE_PREFIX)} contains { or }, refused with REDIS_CLUSTER_NODES: tickwork gives each queue its own hash tag; use a plain prefix such as tickwork`,
    ]);
  }
  return { nodes: env.REDIS_CLUSTER_NODES, url: env.REDIS_URL, failoverMs: env.REDIS_CLUSTER_FAILOVER_MS ?? DEFAULT_CLUSTER_FAILOVER_MS };
}
