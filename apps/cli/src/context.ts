import { createEnqueue, createLogger, createRedis, DEFAULT_COMMAND_TIMEOUT_MS, isCommandTimeout, redisTargetOf, isRedisConnectionError, loadCatalog, QueueSet, redisUnavailable, setCommandTimeout, startTelemetry, TickworkError, type Catalog, type Enqueue, type Logger, type RedisClient, type RedisTarget } from '@tickwork/core';
import { createSchedules, type Schedules } from '@tickwork/schedules';
import { cliActor, recordAction } from '@tickwork/operations';
import type { CliEnv } from './env.js';

/** What a command gets. Redis is connected lazily: `tickwork jobs` works with no Redis at all. */
export interface CommandContext {
  env: CliEnv;
  args: string[];
  flags: Flags;
  catalog: Catalog;
  log: Logger;
  out: Output;
  redis(): RedisClient;
  queues(): QueueSet;
  enqueue(): Enqueue;
  /** The runtime schedule API (catalog and runtime schedules), over the same Redis. */
  schedules(): Schedules;
  /**
   * Records a change the command has made in the audit log the dashboard shows (`/audit`), with the OS user
   * and machine as the actor. `command` is what was run (`jobs cancel`); `detail` what it does not say.
   */
  audit(command: string, detail?: Record<string, string | number | undefined>): Promise<void>;
}

export interface OpenContext extends CommandContext {
  /**
   * Rejects (RedisNoAnswerError) once the Redis connection has not been ready for a whole command deadline:
   * a frozen Redis lets the socket connect and then answers nothing, and BullMQ waits for a ready connection
   * with no deadline of its own. main.ts races the command against it.
   */
  stalled: Promise<never>;
  /** A command that failed because Redis could not be reached gets an error naming REDIS_URL (or REDIS_CLUSTER_NODES) instead. */
  explain(err: unknown): unknown;
  close(): Promise<void>;
}

export interface Flags {
  json: boolean;
  [name: string]: string | boolean | undefined;
}

export interface Output {
  /** Prints `data` as JSON with --json, else prints `text()`. */
  result(data: unknown, text: () => string): void;
  line(text: string): void;
}

/**
 * The CLI's log: on stderr, so stdout carries the command's output alone (a `--json` result stays
 * parseable), and at `warn` where LOG_LEVEL says `info`. In the containers LOG_LEVEL=info is the apps'
 * setting, which `tickwork` inherits: the library's info lines ("manual run of a schedule enqueued") repeat
 * what the command prints. `debug` and `trace` are asked for on purpose and kept.
 */
export function cliLogLevel(level: CliEnv['LOG_LEVEL']): CliEnv['LOG_LEVEL'] {
  return level === 'info' ? 'warn' : level;
}

export async function createContext(env: CliEnv, args: string[], flags: Flags): Promise<OpenContext> {
  const log = createLogger('tickwork', cliLogLevel(env.LOG_LEVEL), process.stderr);
  // With the OTEL_* variables set, an enqueue is a producer span its run joins (telemetry/start.ts).
  const telemetry = await startTelemetry('cli', log);
  const catalog = await loadCatalog(env.JOBS_MODULE, async () => (await import('@tickwork/jobs')).catalog);
  const target = redisTargetOf('tickwork', env);
  const timeoutMs = env.REDIS_COMMAND_TIMEOUT_MS ?? DEFAULT_COMMAND_TIMEOUT_MS;
  // Every command gets a deadline (redis/deadline.ts in @tickwork/core): a frozen node makes the command fail, never the CLI hang.
  setCommandTimeout(timeoutMs);
  let redis: RedisClient | undefined;
  let queues: QueueSet | undefined;
  let lastRedisError: Error | undefined;
  let redisErrors = 0;
  let failStalled: (err: Error) => void = () => undefined;
  const stalled = new Promise<never>((_, reject) => (failStalled = reject));
  stalled.catch(() => undefined);
  const budgetMs = typeof target === 'string' ? timeoutMs : target.failoverMs + timeoutMs;
  let readiness: NodeJS.Timeout | undefined;
  const getRedis = () => {
    if (!redis) {
      const client = (redis = createRedis(target, 'command'));
      if (timeoutMs > 0) {
        let notReadySince = Date.now();
        readiness = setInterval(() => {
          if (client.status === 'ready') notReadySince = Date.now();
          else if (Date.now() - notReadySince >= budgetMs) failStalled(noAnswer(target, timeoutMs));
        }, 100);
        readiness.unref();
      }
      // Kept for the error message; without a listener ioredis prints every retry to stderr.
      redis.on('error', (err) => {
        lastRedisError = err;
        redisErrors += 1;
      });
    }
    return redis;
  };
  const getQueues = () => (queues ??= new QueueSet(getRedis(), env.QUEUE_PREFIX, log));
  let schedules: Schedules | undefined;
  const out: Output = {
    result(data, text) {
      process.stdout.write(flags.json ? `${JSON.stringify(data, null, 2)}\n` : `${text()}\n`);
    },
    line(text) {
      process.stdout.write(`${text}\n`);
    },
  };
  return {
    env,
    args,
    flags,
    catalog,
    log,
    out,
    redis: getRedis,
    queues: getQueues,
    enqueue: () => createEnqueue(catalog, getQueues()),
    schedules: () => (schedules ??= createSchedules({ redis: getRedis(), queues: getQueues(), catalog, log })),
    async audit(command, detail = {}) {
      const { user, host } = cliActor();
      const clean = Object.fromEntries(Object.entries(detail).flatMap(([k, v]) => (v === undefined || v === '' ? [] : [[k, String(v)]])));
      try {
        await recordAction(getRedis(), env.QUEUE_PREFIX, { source: 'cli', user, host, role: null, method: null, target: `tickwork ${command}`, status: null, detail: clean });
      } catch (err) {
        // The change is made: say it went unrecorded, and still succeed (exit 0), as the change stands.
        process.stderr.write(`tickwork: done, but not recorded in the audit log: ${(err as Error).message}\n`);
      }
    },
    stalled,
    explain(err) {
      if (isCommandTimeout(err)) return noAnswer(target, timeoutMs);
      if (!isRedisConnectionError(err) || !lastRedisError) return err;
      return redisUnavailable(target, `tried ${redisErrors} time(s)`, lastRedisError);
    },
    async close() {
      clearInterval(readiness);
      // A graceful close waits on Redis; one frozen node must not hold the exit: at most one deadline.
      const closing = queues?.close().catch(() => undefined);
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([closing, new Promise<void>((resolve) => (timer = setTimeout(resolve, timeoutMs || 1000)))]);
      clearTimeout(timer);
      redis?.disconnect();
      await telemetry.shutdown();
    },
  };
}

/** A command Redis did not answer within REDIS_COMMAND_TIMEOUT_MS (its node frozen, or the network gone). */
export class RedisNoAnswerError extends TickworkError {
  override name = 'RedisNoAnswerError';
}

function noAnswer(target: RedisTarget, timeoutMs: number): RedisNoAnswerError {
  const where = typeof target === 'string' ? 'Redis' : 'a node of the Redis Cluster';
  const variable = typeof target === 'string' ? 'REDIS_URL' : 'REDIS_CLUSTER_NODES';
  const budget = typeof target === 'string' ? `${timeoutMs} ms (REDIS_COMMAND_TIMEOUT_MS)` : `${target.failoverMs + timeoutMs} ms (REDIS_CLUSTER_FAILOVER_MS + REDIS_COMMAND_TIMEOUT_MS)`;
  return new RedisNoAnswerError(`${where} did not answer within ${budget}: it may be frozen or unreachable; check ${variable} and the Redis hosts. The command may or may not have been applied`);
}
