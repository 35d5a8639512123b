import { startRedisServer, type RedisServerHandle } from '@tickwork/testkit';
import type { Redis } from 'ioredis';
import { InvalidLockOptionsError, LockLostError, LockNotAcquiredError, StaleFencingTokenError } from './errors.js';
import { RedisLock, lockKeys, withLock } from './with-lock.js';
import { fencedGet, fencedSet } from './fencing.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

let server: RedisServerHandle;
let redis: Redis;

beforeAll(async () => {
  server = await startRedisServer();
  redis = server.client();
});
afterAll(async () => {
  await server.stop();
});

describe('withLock', () => {
  it('gives mutual exclusion under contention, with increasing fencing tokens', async () => {
    let inside = 0;
    let maxInside = 0;
    const tokens: number[] = [];
    // A read-modify-write that loses updates unless the lock serialises it.
    await redis.set('counter', '0');
    const contender = () =>
      withLock(redis, 'tw', 'counter', { ttlMs: 2000, waitMs: 20_000 }, async (lock) => {
        inside++;
        maxInside = Math.max(maxInside, inside);
        tokens.push(lock.fencingToken);
        const v = Number(await redis.get('counter'));
        await new Promise((r) => setTimeout(r, 5));
        await redis.set('counter', String(v + 1));
        inside--;
      });
    await Promise.all(Array.from({ length: 20 }, contender));
    expect(await redis.get('counter')).toBe('20');
    expect(maxInside).toBe(1);
    expect(tokens).toEqual([...tokens].sort((a, b) => a - b));
    expect(new Set(tokens).size).toBe(20);
    expect(await redis.exists(lockKeys('tw', 'counter').lock)).toBe(0);
  }, 30_000);

  it("does not let an expired holder's release delete the new holder's lock", async () => {
    const old = new RedisLock(redis, 'tw', 'res');
    expect(await old.tryAcquire(100)).toBeDefined();
    await new Promise((r) => setTimeout(r, 200)); // the old holder pauses past its TTL: the case under test
    const next = new RedisLock(redis, 'tw', 'res');
    expect(await next.tryAcquire(10_000)).toBeDefined();
    expect(await old.release()).toBe(false);
    expect(await old.extend(10_000)).toBe(false);
    expect(await redis.exists(lockKeys('tw', 'res').lock)).toBe(1);
    expect(await next.release()).toBe(true);
  });

  it('refuses a write guarded by a stale fencing token', async () => {
    const oldHolder = new RedisLock(redis, 'tw', 'doc');
    const staleToken = (await oldHolder.tryAcquire(100)) as number;
    await new Promise((r) => setTimeout(r, 200)); // paused past its lease
    await withLock(redis, 'tw', 'doc', { ttlMs: 5000 }, async (lock) => {
      expect(lock.fencingToken).toBeGreaterThan(staleToken);
      await fencedSet(redis, 'doc:1', lock.fencingToken, 'new holder');
    });
    // The old holder wakes up and writes with its old token: refused.
    await expect(fencedSet(redis, 'doc:1', staleToken, 'stale')).rejects.toThrow(StaleFencingTokenError);
    expect((await fencedGet(redis, 'doc:1'))?.value).toBe('new holder');
  });

  it('aborts fn and throws LockLostError when the lock is lost while held', async () => {
    const run = withLock(redis, 'tw', 'lost', { ttlMs: 150 }, async (lock) => {
      await redis.del(lockKeys('tw', 'lost').lock); // someone deletes it (e.g. an operator, a failover)
      await new Promise<void>((resolve) => lock.signal.addEventListener('abort', () => resolve(), { once: true }));
      return 'done';
    });
    await expect(run).rejects.toThrow(LockLostError);
  });

  it('renews the lease while fn runs longer than the TTL', async () => {
    // A TTL long enough that a busy machine's event-loop stall cannot outlast it, held for 2.5 TTLs.
    const result = await withLock(redis, 'tw', 'long', { ttlMs: 1000 }, async (lock) => {
      await new Promise((r) => setTimeout(r, 2500));
      expect(lock.signal.aborted).toBe(false);
      return 'ok';
    });
    expect(result).toBe('ok');
  });

  it('throws LockNotAcquiredError when the lock stays busy past waitMs', async () => {
    const holder = new RedisLock(redis, 'tw', 'busy');
    await holder.tryAcquire(10_000);
    await expect(withLock(redis, 'tw', 'busy', { ttlMs: 1000, waitMs: 100 }, async () => 1)).rejects.toThrow(
      LockNotAcquiredError,
    );
    await holder.release();
  });

  it('names bad options', async () => {
    await expect(withLock(redis, 'tw', 'x', { ttlMs: 0 }, async () => 1)).rejects.toThrow(InvalidLockOptionsError);
    await expect(withLock(redis, 'tw', '', { ttlMs: 1000 }, async () => 1)).rejects.toThrow(/non-empty/);
    await expect(withLock(redis, 'tw', 'x', { ttlMs: 1000, waitMs: -1 }, async () => 1)).rejects.toThrow(/waitMs/);
  });
});
