import { createCatalog, createLogger, defineJob, QueueSet, type AnyJob } from '@tickwork/core';
import { lastOutcomes, legacyScheduleKeys, readHistory, REMOVED_SCHEDULE_STATE_TTL_MS, scheduleKeys, shardKeys, shardOf, scheduleRegistryKey } from '@tickwork/schedules';
import { startRedisServer, type RedisServerHandle } from '@tickwork/testkit';
import type { Redis } from 'ioredis';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { pino } from 'pino';
import { reconcileSchedules } from './reconcile.js';

const log = createLogger('test', 'silent');
const scheduled = (name: string, queue: string, pattern: string, tz = 'UTC'): AnyJob =>
  defineJob({ name, queue, schema: z.object({}), schedule: { pattern, tz }, handler: async () => undefined });

describe('reconcileSchedules (real Redis)', () => {
  let server: RedisServerHandle;
  let redis: Redis;

  beforeAll(async () => {
    server = await startRedisServer();
    redis = server.client();
  });
  afterAll(async () => server.stop());
  beforeEach(async () => {
    await redis.flushall();
  });

  const run = async (jobs: AnyJob[]) => {
    const queues = new QueueSet(server.client(), 'tickwork', log);
    try {
      return await reconcileSchedules({ catalog: createCatalog(jobs), queues, redis, log });
    } finally {
      await queues.close();
    }
  };
  const registry = async () =>
    Object.fromEntries(Object.entries(await redis.hgetall(scheduleRegistryKey('tickwork'))).map(([k, v]) => [k, JSON.parse(v) as { queue: string; tz: string; spec: string }]));

  it('registers each scheduled job with its explicit timezone and reports its next run', async () => {
    const result = await run([scheduled('reports.daily', 'reports', '0 8 * * *', 'America/New_York')]);
    expect(await registry()).toMatchObject({ 'reports.daily': { queue: 'reports', tz: 'America/New_York' } });
    const next = result.registered[0]?.next;
    expect(next).toBeInstanceOf(Date);
    // 08:00 in New York is 12:00 or 13:00 UTC depending on DST.
    expect([12, 13]).toContain(next?.getUTCHours());
    expect(next?.getUTCMinutes()).toBe(0);
  });

  it('removes a schedule whose job left the catalog, even when its queue left too', async () => {
    await run([scheduled('keep.me', 'q1', '0 * * * *'), scheduled('gone.too', 'old', '0 * * * *')]);
    const result = await run([scheduled('keep.me', 'q1', '0 * * * *')]);
    expect(result.removed).toEqual([{ id: 'gone.too', queue: 'old' }]);
    expect(Object.keys(await registry())).toEqual(['keep.me']);
  });

  it("keeps a removed schedule's state for 30 days, and for good once it is registered again", async () => {
    await run([scheduled('come.back', 'q1', '0 * * * *')]);
    const keys = scheduleKeys('tickwork', 'come.back');
    await redis.set(keys.lastSuccess, '{}');
    await redis.zadd(keys.history, 1, 'come.back@x');
    await run([]);
    for (const key of [keys.lastSuccess, keys.history]) {
      const ttl = await redis.pttl(key);
      expect({ key, expires: ttl > REMOVED_SCHEDULE_STATE_TTL_MS - 60_000 && ttl <= REMOVED_SCHEDULE_STATE_TTL_MS }).toEqual({ key, expires: true });
    }
    await run([scheduled('come.back', 'q1', '0 * * * *')]);
    for (const key of [keys.lastSuccess, keys.history]) expect({ key, ttl: await redis.pttl(key) }).toEqual({ key, ttl: -1 });
  });

  it('migrates a schedule of the layout before the store: the old cursor seeds the next occurrence, the history moves', async () => {
    const old = legacyScheduleKeys('tickwork', 'old.hourly');
    const cursor = Date.parse('2026-01-01T05:00:00Z'); // the last occurrence the old scheduler dealt with
    await redis.set(old.cursor, String(cursor));
    await redis.zadd(old.history, cursor, 'old.hourly@2026-01-01T05:00:00.000Z');
    await redis.hset(old.records, 'old.hourly@2026-01-01T05:00:00.000Z', JSON.stringify({ id: 'old.hourly@2026-01-01T05:00:00.000Z', outcome: 'completed' }));
    await redis.set(old.lastSuccess, JSON.stringify({ id: 'old.hourly@2026-01-01T05:00:00.000Z' }));
    const results = await Promise.all([1, 2].map(() => run([scheduled('old.hourly', 'q1', '0 * * * *')])));
    // neither repeated (05:00) nor skipped (06:00): the due entry is the first occurrence after the cursor
    expect(results[0]?.registered[0]?.next?.toISOString()).toBe('2026-01-01T06:00:00.000Z');
    const sk = shardKeys('tickwork', shardOf('old.hourly'));
    expect(Number(await redis.zscore(sk.due, 'old.hourly'))).toBe(Date.parse('2026-01-01T06:00:00Z'));
    expect(await redis.exists(old.cursor, old.history, old.records, old.lastSuccess)).toBe(0);
    expect((await readHistory(redis, 'tickwork', 'old.hourly')).map((r) => r.outcome)).toEqual(['completed']);
    expect((await lastOutcomes(redis, 'tickwork', 'old.hourly')).lastSuccess?.id).toBe('old.hourly@2026-01-01T05:00:00.000Z');
  });

  it('updates a registration in place when its pattern changes, and running it again changes nothing', async () => {
    await run([scheduled('a.job', 'q1', '0 * * * *')]);
    await run([scheduled('a.job', 'q1', '30 * * * *')]);
    const second = await run([scheduled('a.job', 'q1', '30 * * * *')]);
    expect(second.removed).toEqual([]);
    expect(Object.keys(await registry())).toEqual(['a.job']);
    expect((await registry())['a.job']?.spec).toContain('30 * * * *');
  });

  it("logs 'schedule registered' at info only when a registration is new or changed", async () => {
    const lines: { level: number; msg: string }[] = [];
    const captured = pino({ level: 'debug' }, { write: (l: string) => void lines.push(JSON.parse(l) as { level: number; msg: string }) });
    const reconcile = async (pattern: string) => {
      const queues = new QueueSet(server.client(), 'tickwork', log);
      try {
        await reconcileSchedules({ catalog: createCatalog([scheduled('a.job', 'q1', pattern)]), queues, redis, log: captured });
      } finally {
        await queues.close();
      }
      return lines.splice(0).filter((l) => l.msg.startsWith('schedule ')).map((l) => [l.level, l.msg]);
    };
    expect(await reconcile('0 * * * *')).toEqual([[30, 'schedule registered']]);
    expect(await reconcile('0 * * * *')).toEqual([[20, 'schedule unchanged']]);
    expect(await reconcile('15 * * * *')).toEqual([[30, 'schedule registered']]);
  });
});
