import { isRedisDatabaseError, type RedisClient, type RedisTarget } from './connection.js';
import { TickworkError } from '../errors.js';
import type { Logger } from '../logger.js';

/** REDIS_URL with its password (and user name) replaced by `***`, fit for a log line or an error. */
export function redactRedisUrl(url: string): string {
  try {
    const u = new URL(url);
    if (u.password) u.password = '***';
    if (u.username) u.username = '***';
    return u.toString();
  } catch {
    return '(REDIS_URL is not a URL)';
  }
}

/** Redis could not be used at start: nothing answered, or it refused the credentials. A configuration error. */
export class RedisUnavailableError extends TickworkError {
  override name = 'RedisUnavailableError';
}

/** Redis answered but refused the credentials (a wrong password is not fixed by retrying). */
export function isRedisAuthError(err: unknown): boolean {
  return err instanceof Error && /WRONGPASS|NOAUTH|invalid password|ERR AUTH/i.test(err.message);
}

const CONNECTION_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'ENOTFOUND', 'EHOSTUNREACH', 'ENETUNREACH', 'EPIPE', 'EAI_AGAIN']);

/** The error is about reaching Redis (network, closed connection, no reply within the deadline, credentials, its database), not about a command. */
export function isRedisConnectionError(err: unknown): boolean {
  if (!(err instanceof Error)) return false;
  const code = (err as { code?: unknown }).code;
  return (typeof code === 'string' && CONNECTION_CODES.has(code)) || isRedisAuthError(err) || isRedisDatabaseError(err) || /Connection is closed|max retries per request|^Command timed out$/i.test(err.message);
}

/** The variable naming where Redis is, for a log line or an error: REDIS_URL (redacted) or REDIS_CLUSTER_NODES. */
export function describeRedisTarget(target: RedisTarget): string {
  if (typeof target === 'string') return `REDIS_URL=${redactRedisUrl(target)}`;
  return `REDIS_CLUSTER_NODES=${target.nodes.map((n) => `${n.host}:${n.port}`).join(',')}`;
}

/** The message for a Redis that could not be used, naming REDIS_URL (redacted) or the cluster's nodes, and what was tried. */
export function redisUnavailable(target: RedisTarget, tried: string, last: unknown): RedisUnavailableError {
  const where = `${typeof target === 'string' ? 'Redis' : 'Redis Cluster'} at ${describeRedisTarget(target)}`;
  const variable = typeof target === 'string' ? 'REDIS_URL' : 'REDIS_CLUSTER_NODES';
  const lastMessage = last instanceof Error ? last.message : 'no answer';
  if (isRedisAuthError(last)) {
    return new RedisUnavailableError(`${where} refused the credentials (${lastMessage}); check the password (and user) in REDIS_URL`);
  }
  if (isRedisDatabaseError(last)) {
    return new RedisUnavailableError(
      `${where} has no such database (${lastMessage}): REDIS_URL's path is a database number below Redis's \`databases\` setting (16, numbered 0 to 15, unless configured otherwise); check REDIS_URL`,
    );
  }
  return new RedisUnavailableError(`cannot reach ${where}: ${tried}, last error: ${lastMessage}; check ${variable} and that Redis is running`);
}

/**
 * Resolves once `redis` is ready; rejects with RedisUnavailableError when it refuses the credentials or
 * the database REDIS_URL names (at once: retrying will not fix either) or has not answered within `timeoutMs`. A Redis that never
 * answered at start is a configuration error, reported as such, not retried forever.
 */
export function waitForRedis(redis: RedisClient, url: RedisTarget, timeoutMs: number): Promise<void> {
  if (redis.status === 'ready') return Promise.resolve();
  return new Promise((resolve, reject) => {
    let attempts = 0;
    let last: unknown;
    const finish = (err?: Error) => {
      clearTimeout(timer);
      redis.off('ready', onReady);
      redis.off('error', onError);
      if (err) reject(err);
      else resolve();
    };
    const onReady = () => finish();
    const onError = (err: Error) => {
      attempts += 1;
      last = err;
      if (isRedisAuthError(err) || isRedisDatabaseError(err)) finish(redisUnavailable(url, '', err));
    };
    const timer = setTimeout(() => finish(redisUnavailable(url, `tried ${attempts} time(s) in ${timeoutMs} ms (REDIS_STARTUP_TIMEOUT_MS)`, last)), timeoutMs);
    redis.on('ready', onReady);
    redis.on('error', onError);
  });
}

/**
 * Whether Redis answers a PING within `ms`. For decisions that must not rest on the outage log alone: a
 * connection error can be noted (a BullMQ worker's 'error' event, say) without any connection going
 * through a reconnect that would end the outage.
 */
export function redisAnswersWithin(redis: { ping(): Promise<unknown> }, ms: number): Promise<boolean> {
  return new Promise((resolve) => {
    const timer = setTimeout(() => resolve(false), ms);
    redis.ping().then(
      () => (clearTimeout(timer), resolve(true)),
      () => (clearTimeout(timer), resolve(false)),
    );
  });
}

export interface RedisOutageLog {
  /** Follows a connection: its errors feed the outage, its `ready` ends it. */
  watch(redis: RedisClient): void;
  /** Counts a connection error (true) or leaves any other error to the caller (false). */
  note(err: unknown): boolean;
  /** Whether Redis is unreachable right now. */
  readonly down: boolean;
}

/**
 * After a successful start, an outage is logged once when it begins and once, with a summary, when Redis
 * is back; the retries in between (ioredis reconnects with backoff, see connection.ts) are only counted.
 * One log for all of a process's connections: they share a Redis, so they share its outages.
 */
export function createRedisOutageLog(log: Logger, url: RedisTarget): RedisOutageLog {
  let since: number | undefined;
  let failures = 0;
  const redis = typeof url === 'string' ? redactRedisUrl(url) : describeRedisTarget(url);
  const note = (err: unknown): boolean => {
    if (!isRedisConnectionError(err)) return false;
    failures += 1;
    if (since === undefined) {
      since = Date.now();
      log.warn({ redis, err: { message: (err as Error).message } }, 'redis unreachable; reconnecting with backoff (a summary follows when it is back)');
    }
    return true;
  };
  const recovered = () => {
    if (since === undefined) return;
    log.info({ redis, downMs: Date.now() - since, failedAttempts: failures }, 'redis reachable again');
    since = undefined;
    failures = 0;
  };
  return {
    watch(conn) {
      conn.on('error', (err) => {
        if (!note(err)) log.warn({ err: { message: err.message } }, 'redis connection error');
      });
      // A connection can report `ready` for a handshake that finished just as Redis went away (seen under
      // load: "reachable again" 4 ms into an outage, then a second "unreachable"). So the outage ends only
      // when a command round trip on that connection succeeds, and only the outage it was sent in.
      conn.on('ready', () => {
        const outage = since;
        if (outage === undefined) return;
        conn.ping().then(
          () => {
            if (since === outage) recovered();
          },
          () => undefined,
        );
      });
    },
    note,
    get down() {
      return since !== undefined;
    },
  };
}
