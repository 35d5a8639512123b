/**
 * Everything tickwork keeps in Redis besides the ledger (retention.test.ts) levels off: each growing
 * structure has a cap or a TTL (README: "What tickwork keeps in Redis").
 */
import { createAlerter, FAILURE_COUNT_TTL_MS, type DeadLetterEntry } from '@tickwork/operations';
import { createLogger, EVENTS_MAX_LEN, QueueSet } from '@tickwork/core';
import { lockKeys, OverlapGuard, SKIP_RECORDS_TTL_MS, withLock } from '@tickwork/exactly-once';
import { startRedisServer, type RedisServerHandle } from '@tickwork/testkit';
import type { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const log = createLogger('test', 'silent');
let server: RedisServerHandle;
let redis: Redis;

beforeAll(async () => {
  server = await startRedisServer();
  redis = server.client();
});
afterAll(async () => server?.stop());

const ttlWithin = async (key: string, ms: number) => {
  const ttl = await redis.pttl(key);
  return ttl > ms - 60_000 && ttl <= ms;
};

describe('bounded state', () => {
  it(`keeps about ${EVENTS_MAX_LEN} entries in a queue's event stream, however many jobs pass`, async () => {
    const queues = new QueueSet(server.client(), 'tw', log);
    const queue = queues.get('events');
    for (let i = 0; i < 4; i++) await queue.addBulk(Array.from({ length: 1000 }, (_, k) => ({ name: 'n', data: { k } })));
    const length = await redis.xlen('tw:events:events');
    expect(length).toBeGreaterThan(0);
    // XADD MAXLEN ~ trims whole stream nodes (100 entries by default), so the length hovers just above the cap.
    expect(length).toBeLessThanOrEqual(EVENTS_MAX_LEN + 100);
    await queues.close();
  });

  it('forgets an overlap skip list 30 days after its latest skip', async () => {
    const guard = new OverlapGuard(redis, { prefix: 'tw', leaseMs: 10_000 });
    expect(await guard.enter('s', 'occ-1', 'skip', undefined)).toEqual({ kind: 'run' });
    expect(await guard.enter('s', 'occ-2', 'skip', undefined)).toMatchObject({ kind: 'skip' });
    expect(await ttlWithin(guard.skipsKey('s'), SKIP_RECORDS_TTL_MS)).toBe(true);
  });

  it("forgets a schedule's consecutive-failure count 30 days after its latest failure", async () => {
    const alerter = createAlerter({ log, redis, prefix: 'tw' });
    const entry = { originQueue: 'q', jobName: 'j', scheduleId: 'nightly', redriveCount: 0, failureReason: 'x' } as DeadLetterEntry;
    await alerter.deadLettered({ dlqQueue: 'q.dlq', dlqJobId: '1', entry });
    expect(await redis.get('tw:meta:consecutive-failures:q:nightly')).toBe('1');
    expect(await ttlWithin('tw:meta:consecutive-failures:q:nightly', FAILURE_COUNT_TTL_MS)).toBe(true);
  });

  it("a success resets its schedule's count; the resets of one turn go as one DEL per queue", async () => {
    const alerter = createAlerter({ log, redis, prefix: 'tw' });
    const key = (q: string, s: string) => `tw:meta:consecutive-failures:${q}:${s}`;
    for (const q of ['qa', 'qb']) for (const s of ['s1', 's2', 's3']) await redis.set(key(q, s), '2');
    await redis.set(key('qa', 'other'), '1');
    const dels = async () => Number(/cmdstat_del:calls=(\d+)/.exec(await redis.info('commandstats'))?.[1] ?? 0);
    const before = await dels();
    await Promise.all(['s1', 's2', 's3'].flatMap((s) => [alerter.scheduledRunSucceeded('qa', s), alerter.scheduledRunSucceeded('qb', s)]));
    expect(await dels()).toBe(before + 2);
    for (const q of ['qa', 'qb']) for (const s of ['s1', 's2', 's3']) expect(await redis.exists(key(q, s))).toBe(0);
    expect(await redis.get(key('qa', 'other'))).toBe('1');
    // The next turn's resets go in a call of their own.
    await alerter.scheduledRunSucceeded('qa', 'other');
    expect(await redis.exists(key('qa', 'other'))).toBe(0);
  });

  it('keeps no counter per lock name for ever; fencing tokens still increase after the last one is forgotten', async () => {
    const tokens: number[] = [];
    await withLock(redis, 'tw', 'doc', { ttlMs: 1000 }, async (l) => void tokens.push(l.fencingToken));
    const fence = lockKeys('tw', 'doc').fence;
    expect(await redis.pttl(fence)).toBeGreaterThan(0);
    await withLock(redis, 'tw', 'doc', { ttlMs: 1000 }, async (l) => void tokens.push(l.fencingToken));
    await redis.del(fence); // as its TTL would
    await withLock(redis, 'tw', 'doc', { ttlMs: 1000 }, async (l) => void tokens.push(l.fencingToken));
    expect(tokens).toHaveLength(3);
    expect(tokens[0]! < tokens[1]! && tokens[1]! < tokens[2]!).toBe(true);
    expect(tokens.every((t) => Number.isSafeInteger(t))).toBe(true);
  });
});
