import { randomBytes } from 'node:crypto';
import type { RedisClient } from '@tickwork/core';
import type { HeldLock, LockFn, LockOptions } from '@tickwork/core';
import { InvalidLockOptionsError, LockLostError, LockNotAcquiredError } from './errors.js';

/**
 * A lease-based mutex in Redis with fencing tokens.
 *
 * A lease alone cannot give mutual exclusion: a holder can pause (GC, a stalled event loop, a VM
 * migration) past its TTL, the lock expires, a second holder takes it, then the first wakes up and
 * writes, believing it still holds the lock. The fencing token is a counter incremented on every
 * acquisition; the holder passes it with each write, and the resource refuses a token older than the
 * newest it has seen (see `fencedSet`). The paused holder's late write is then rejected instead of
 * silently overwriting the new holder's work.
 */



/**
 * The fencing token is the Redis server's clock in microseconds, raised above the last token handed out
 * when the clock has not moved past it: strictly increasing per lock name without a counter kept forever.
 * The fence key remembers the last token for FENCE_TTL_MS after the last acquisition (so a lock name used
 * once costs nothing after that); past it, the clock alone keeps tokens increasing.
 */
const ACQUIRE = `
if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then
  local t = redis.call('TIME')
  local token = tonumber(t[1]) * 1000000 + tonumber(t[2])
  local last = tonumber(redis.call('GET', KEYS[2]) or '0')
  if token <= last then token = last + 1 end
  redis.call('SET', KEYS[2], string.format('%d', token), 'PX', ARGV[3])
  return string.format('%d', token)
end
return 0
`;

/** How long a lock name's last fencing token is remembered after its last acquisition. */
const FENCE_TTL_MS = 7 * 24 * 3600_000;

const EXTEND = `
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('PEXPIRE', KEYS[1], ARGV[2])
end
return 0
`;

const RELEASE = `
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('DEL', KEYS[1])
end
return 0
`;

type LockRedis = RedisClient & {
  tickworkLockAcquire(key: string, fenceKey: string, token: string, ttlMs: number, fenceTtlMs: number): Promise<string | number>;
  tickworkLockExtend(key: string, token: string, ttlMs: number): Promise<number>;
  tickworkLockRelease(key: string, token: string): Promise<number>;
};

function withLockScripts(redis: RedisClient): LockRedis {
  const r = redis as LockRedis;
  if (typeof r.tickworkLockAcquire !== 'function') {
    redis.defineCommand('tickworkLockAcquire', { numberOfKeys: 2, lua: ACQUIRE });
    redis.defineCommand('tickworkLockExtend', { numberOfKeys: 1, lua: EXTEND });
    redis.defineCommand('tickworkLockRelease', { numberOfKeys: 1, lua: RELEASE });
  }
  return r;
}

/** Lock and fence counter share a hash tag so the acquire script stays on one Cluster slot. */
export function lockKeys(prefix: string, name: string): { lock: string; fence: string } {
  return { lock: `${prefix}:lock:{${name}}`, fence: `${prefix}:lock:{${name}}:fence` };
}

/** Low-level handle, for callers that cannot use the callback form. Prefer `withLock`. */
export class RedisLock {
  private readonly redis: LockRedis;
  private readonly keys: { lock: string; fence: string };
  private readonly token = randomBytes(16).toString('hex');

  constructor(redis: RedisClient, prefix: string, readonly name: string) {
    this.redis = withLockScripts(redis);
    this.keys = lockKeys(prefix, name);
  }

  /** The fencing token on success, undefined when another holder has the lock. */
  async tryAcquire(ttlMs: number): Promise<number | undefined> {
    // The token comes back as a string: Lua would turn a number this large into a truncated integer reply.
    const fence = Number(await this.redis.tickworkLockAcquire(this.keys.lock, this.keys.fence, this.token, ttlMs, FENCE_TTL_MS));
    return fence > 0 ? fence : undefined;
  }

  async extend(ttlMs: number): Promise<boolean> {
    return (await this.redis.tickworkLockExtend(this.keys.lock, this.token, ttlMs)) === 1;
  }

  /** Deletes the lock only if this handle still holds it: an expired holder never frees a newer holder's lock. */
  async release(): Promise<boolean> {
    return (await this.redis.tickworkLockRelease(this.keys.lock, this.token)) === 1;
  }
}

/**
 * Runs `fn` while holding lock `name`. Throws LockNotAcquiredError if the lock stays busy for `waitMs`,
 * and LockLostError if the lease was lost before `fn` finished (then `lock.signal` fired when it was lost).
 */
export async function withLock<T>(
  redis: RedisClient,
  prefix: string,
  name: string,
  opts: LockOptions,
  fn: (lock: HeldLock) => Promise<T>,
): Promise<T> {
  validate(name, opts);
  const handle = new RedisLock(redis, prefix, name);
  const fencingToken = await acquire(handle, opts);

  const controller = new AbortController();
  const onParentAbort = () => controller.abort(opts.signal?.reason);
  opts.signal?.addEventListener('abort', onParentAbort, { once: true });
  let lost: LockLostError | undefined;
  const lose = (detail: string) => {
    if (lost) return;
    lost = new LockLostError(name, detail);
    controller.abort(lost);
  };

  // Renew at a third of the TTL: two renewals can fail (a Redis blip) before the lease runs out.
  let lastRenewed = Date.now();
  let timer: NodeJS.Timeout | undefined;
  let stopped = false;
  const schedule = () => {
    timer = setTimeout(renew, Math.max(Math.floor(opts.ttlMs / 3), 10));
    timer.unref();
  };
  const renew = async () => {
    try {
      if (await handle.extend(opts.ttlMs)) lastRenewed = Date.now();
      else return lose('the lease expired and the lock is gone or held by someone else');
    } catch (err) {
      if (Date.now() - lastRenewed >= opts.ttlMs) {
        return lose(`could not renew for ${opts.ttlMs} ms: ${(err as Error).message}`);
      }
    }
    if (!stopped) schedule();
  };
  schedule();

  try {
    const result = await fn({ name, fencingToken, signal: controller.signal });
    if (lost) throw lost;
    return result;
  } finally {
    stopped = true;
    clearTimeout(timer);
    opts.signal?.removeEventListener('abort', onParentAbort);
    await handle.release().catch(() => false);
  }
}

async function acquire(handle: RedisLock, opts: LockOptions): Promise<number> {
  const waitMs = opts.waitMs ?? opts.ttlMs;
  const started = Date.now();
  let pauseMs = 10;
  for (;;) {
    opts.signal?.throwIfAborted();
    const fence = await handle.tryAcquire(opts.ttlMs);
    if (fence !== undefined) return fence;
    const waited = Date.now() - started;
    if (waited >= waitMs) throw new LockNotAcquiredError(handle.name, waitMs);
    // Jittered backoff up to 200 ms: contenders spread out instead of hammering Redis in lockstep.
    const sleep = Math.min(pauseMs * (0.5 + Math.random()), waitMs - waited);
    pauseMs = Math.min(pauseMs * 2, 200);
    await abortableSleep(sleep, opts.signal);
  }
}

function abortableSleep(ms: number, signal: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal?.reason as Error);
    };
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

function validate(name: string, opts: LockOptions): void {
  if (typeof name !== 'string' || name.length === 0 || name.length > 256) {
    throw new InvalidLockOptionsError(String(name), 'the lock name must be a non-empty string of at most 256 characters');
  }
  if (!Number.isInteger(opts.ttlMs) || opts.ttlMs < 30) {
    throw new InvalidLockOptionsError(name, `ttlMs ${opts.ttlMs} must be an integer of at least 30 ms, e.g. { ttlMs: 30_000 }`);
  }
  if (opts.waitMs !== undefined && (!Number.isFinite(opts.waitMs) || opts.waitMs < 0)) {
    throw new InvalidLockOptionsError(name, `waitMs ${opts.waitMs} must be a number of ms >= 0`);
  }
}


export function lockFn(redis: RedisClient, prefix: string, signal?: AbortSignal): LockFn {
  return (name, opts, fn) => {
    const signals = [opts.signal, signal].filter((s): s is AbortSignal => s !== undefined);
    const combined = signals.length > 1 ? AbortSignal.any(signals) : signals[0];
    return withLock(redis, prefix, name, { ...opts, ...(combined && { signal: combined }) }, fn);
  };
}
