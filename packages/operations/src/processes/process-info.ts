import { readFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { defineScript, runScript, type Logger, type RedisClient } from '@tickwork/core';

/**
 * What each worker and scheduler process says about itself, for the dashboard's Processes page and
 * `tickwork processes`. The registries (worker-registry.ts in @tickwork/core, takeover.ts in
 * @tickwork/schedules) hold only liveness: a member and the time of its last beat. This adds, per process:
 *
 * - `<prefix>:meta:process:<role>:<tag>`: a hash with host, pid, version, queues, concurrency, start time,
 *   busy slots and `seenAt` (the Redis time of its last write), plus `stopped` after a clean stop. It
 *   expires PROCESS_MEMORY_MS after its last write, so a process that died stays listed (as gone) that long;
 * - `<prefix>:meta:processes`: a sorted set of `<role>:<tag>` scored by the Redis time of each process's last
 *   write, which the readers list (the registries cannot: a dead scheduler leaves its registry within seconds).
 *
 * A process writes when it starts, then every few seconds (busy slots and the expiry): a few commands per
 * process, whatever the job rate. Liveness still comes from the registries; `seenAt` stands in only where a
 * registry no longer has the process.
 */

export type ProcessRole = 'worker' | 'scheduler';

/** How long a process that stopped writing stays listed. */
export const PROCESS_MEMORY_MS = 10 * 60_000;
/** How often a process refreshes its record (busy slots, expiry) by default. */
export const PROCESS_INFO_EVERY_MS = 5000;

export function processInfoKey(prefix: string, role: ProcessRole, tag: string): string {
  return `${prefix}:meta:process:${role}:${tag}`;
}

export function processIndexKey(prefix: string): string {
  return `${prefix}:meta:processes`;
}

/** KEYS[1] record. ARGV: expiry ms, then field/value pairs. Sets them and `seenAt` (Redis time, ms); replies that time. */
const WRITE_RECORD = defineScript(`local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('HSET', KEYS[1], 'seenAt', now, unpack(ARGV, 2))
redis.call('PEXPIRE', KEYS[1], ARGV[1])
return now`);

/** KEYS[1] index. ARGV: expiry ms, member. Scores the member now (Redis time) and drops the expired ones. */
const INDEX = defineScript(`local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('ZADD', KEYS[1], now, ARGV[2])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - tonumber(ARGV[1]))
return now`);

/** The version of the package whose package.json is at `url` (an app's), or 'unknown' when it cannot be read. */
export function packageVersion(url: URL): string {
  try {
    const version = (JSON.parse(readFileSync(url, 'utf8')) as { version?: unknown }).version;
    return typeof version === 'string' && version !== '' ? version : 'unknown';
  } catch {
    return 'unknown';
  }
}

export interface ProcessInfoOptions {
  redis: RedisClient;
  prefix: string;
  role: ProcessRole;
  /** The process's member in its registry: the worker registry's tag, or the scheduler's replica id. */
  tag: string;
  version: string;
  /** The queues it serves (a worker) or schedules into (a scheduler). */
  queues: readonly string[];
  /** Jobs run at once per queue (a worker). */
  concurrency?: number;
  /** Jobs running now (a worker); read at each write, so it must be cheap. */
  busy?: () => number;
  /** Its registry's dead-after time: silence longer than this is a death (readers judge by it). */
  deadAfterMs: number;
  everyMs?: number;
  memoryMs?: number;
  log: Logger;
  /** The process's outage log: while Redis is known to be down, a failed write is its to report. */
  outage?: { readonly down: boolean } | undefined;
}

export interface ProcessInfoWriter {
  /** Writes the record now, then every `everyMs`. Never throws: a failed write is logged and retried. */
  start(): Promise<void>;
  /** Stops writing; `clean`: notes the clean stop, at `seenAt` (the record then expires as usual), after the write under way. */
  stop(clean: boolean): Promise<void>;
}

export function startProcessInfo(opts: ProcessInfoOptions): ProcessInfoWriter {
  const key = processInfoKey(opts.prefix, opts.role, opts.tag);
  const index = processIndexKey(opts.prefix);
  const memoryMs = opts.memoryMs ?? PROCESS_MEMORY_MS;
  const everyMs = opts.everyMs ?? PROCESS_INFO_EVERY_MS;
  const started = new Date().toISOString();
  let timer: NodeJS.Timeout | undefined;
  let stopped = false;
  let failing = false;
  let writing: Promise<void> | undefined;
  let first = true;

  const fields = (): (string | number)[] => {
    const busy = opts.busy ? ['busy', opts.busy()] : [];
    if (!first) return busy;
    return [
      ...busy,
      ...['role', opts.role, 'tag', opts.tag, 'host', hostname(), 'pid', process.pid, 'version', opts.version, 'started', started],
      ...['queues', JSON.stringify(opts.queues), 'deadAfterMs', opts.deadAfterMs],
      ...(opts.concurrency !== undefined ? ['concurrency', opts.concurrency] : []),
    ];
  };

  async function write(extra: (string | number)[] = []): Promise<void> {
    try {
      await runScript(opts.redis, WRITE_RECORD, [key], [memoryMs, ...fields(), ...extra]);
      await runScript(opts.redis, INDEX, [index], [memoryMs, `${opts.role}:${opts.tag}`]);
      first = false;
      if (failing) opts.log.info('process record restored');
      failing = false;
    } catch (err) {
      // Once per failing streak; the Processes page only shows this process's details late meanwhile.
      if (!failing && !opts.outage?.down) opts.log.warn({ err: { message: (err as Error).message } }, 'could not write the process record; retrying');
      failing = true;
    }
  }

  function tick(): Promise<void> {
    writing = write().finally(() => {
      writing = undefined;
      if (!stopped) {
        timer = setTimeout(() => void tick(), everyMs);
        timer.unref();
      }
    });
    return writing;
  }

  return {
    start: tick,
    async stop(clean) {
      stopped = true;
      clearTimeout(timer);
      // Not clean (Redis may be unreachable): nothing to wait for, the record just ages.
      if (!clean) return;
      await writing;
      await write(['stopped', 1]);
    },
  };
}
