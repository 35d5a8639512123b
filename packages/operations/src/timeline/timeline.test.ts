/**
 * The charts' history (timeline/): bucket and percentile math, and the rings on a private Redis, written by
 * the worker's writer with a simulated clock: days of minutes, a month of hours, the ring wrapping over old
 * slots, a late write left out, several writers' counts merged, and the same number of bytes (MEMORY USAGE)
 * however long and busy. Then the same writes on Redis Cluster (one flush over keys in many slots).
 */
import { createLogger, type RedisClient } from '@tickwork/core';
import { timelineKeyOf } from '@tickwork/schedules';
import { startTestRedis, type TestRedis } from '@tickwork/testkit';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { bucketBounds, bucketOf, BUCKETS, percentile } from './buckets.js';
import { layoutBytes, MEMORY_LAYOUT, QUEUE_LAYOUT, SCHEDULE_LAYOUT } from './layout.js';
import { memoryTimelineKey, sampleMemory } from './memory.js';
import { readMemoryTimeline, readQueueTimeline, readScheduleTimeline } from './read.js';
import { queueTimelineKey, TimelineWriter } from './writer.js';

const log = createLogger('test', 'silent');
const MIN = 60_000;
const HOUR = 3_600_000;
const T0 = Date.UTC(2026, 0, 1, 0, 0, 0);

describe('buckets and percentiles', () => {
  it('puts a duration in its doubling bucket', () => {
    const cases: [number, number][] = [[-5, 0], [Number.NaN, 0], [0, 0], [0.99, 0], [1, 1], [1.9, 1], [2, 2], [3, 2], [4, 3], [1023, 10], [1024, 11], [2 ** 22 - 1, 22], [2 ** 22, 23], [2 ** 40, 23], [Infinity, 23]];
    for (const [ms, bucket] of cases) expect(bucketOf(ms), `${ms} ms`).toBe(bucket);
    for (let i = 0; i < BUCKETS; i++) {
      const { lo, hi } = bucketBounds(i);
      expect(bucketOf(lo), `lower bound of ${i}`).toBe(i);
      if (hi !== Infinity) expect(bucketOf(hi), `upper bound of ${i}`).toBe(i + 1);
    }
  });

  it('reads a percentile within the bucket of the true value, null when nothing was counted', () => {
    expect(percentile(new Array<number>(BUCKETS).fill(0), 0.5)).toBeNull();
    const counts = new Array<number>(BUCKETS).fill(0);
    const values = Array.from({ length: 1000 }, (_, i) => i + 1); // 1..1000 ms
    for (const v of values) counts[bucketOf(v)] = (counts[bucketOf(v)] ?? 0) + 1;
    for (const q of [0.5, 0.95, 0.99]) {
      const truth = values[Math.ceil(q * values.length) - 1] as number;
      const { lo, hi } = bucketBounds(bucketOf(truth));
      const read = percentile(counts, q) as number;
      expect(read, `p${q * 100}`).toBeGreaterThanOrEqual(lo);
      expect(read, `p${q * 100}`).toBeLessThanOrEqual(hi);
    }
    // The open last bucket reads as its lower bound.
    const slow = new Array<number>(BUCKETS).fill(0);
    slow[BUCKETS - 1] = 3;
    expect(percentile(slow, 0.99)).toBe(2 ** 22);
  });
});

describe('timelines on Redis', () => {
  let t: TestRedis;
  let redis: RedisClient;
  let now = T0;
  const clock = () => now;
  const writer = (prefix = 'tw') => new TimelineWriter({ redis, prefix, log, clock });
  const usage = async (key: string) => Number(await redis.call('MEMORY', 'USAGE', key));

  beforeAll(async () => {
    t = await startTestRedis('standalone');
    redis = t.client() as RedisClient;
  });
  afterAll(async () => {
    await t?.stop();
  });
  beforeEach(async () => {
    await t.flush();
    now = T0;
  });

  it('keeps a queue in the same bytes after days of minutes, the minute ring wrapping over the oldest day', async () => {
    const w = writer();
    const q = w.queue('mail');
    const key = queueTimelineKey(redis, 'tw', 'mail');
    q.attempt('completed', 5, 1);
    await w.flush();
    const first = await usage(key);
    expect(await redis.strlen(key)).toBe(layoutBytes(QUEUE_LAYOUT));
    // Three days, a minute at a time: minute m completes (m mod 7) + 1 jobs, one fails and is retried,
    // every 10th minute one is dead-lettered.
    const perMinute = (m: number) => (m % 7) + 1;
    for (let m = 0; m < 3 * 1440; m++) {
      now = T0 + 1440 * MIN + m * MIN + 30_000;
      for (let i = 0; i < perMinute(m); i++) q.attempt('completed', 40, 3);
      q.attempt('retried', 900, 3);
      if (m % 10 === 0) q.deadLettered();
      await w.flush();
    }
    console.log(`timeline bytes: queue ${layoutBytes(QUEUE_LAYOUT)} B value, MEMORY USAGE ${first} B after the first write, ${await usage(key)} B after 4 days of minutes`);
    expect(await usage(key)).toBe(first);
    expect(await redis.strlen(key)).toBe(layoutBytes(QUEUE_LAYOUT));

    // The last hour: 60 minutes, each exactly as written (the ring held these minutes 1 and 2 days ago too).
    const hour = await readQueueTimeline(redis, 'tw', 'mail', '1h', { now, histograms: true });
    expect(hour.points).toHaveLength(60);
    const lastMinute = 3 * 1440 - 1;
    hour.points.forEach((p, i) => {
      const m = lastMinute - 59 + i;
      expect(p, p.at).toMatchObject({ completed: perMinute(m), retried: 1, failed: 0, deadLettered: m % 10 === 0 ? 1 : 0 });
      expect(p.at).toBe(new Date(T0 + 1440 * MIN + m * MIN).toISOString());
    });
    expect(hour.totals.retried).toBe(60);
    // Run times: the completions at 40 ms ([32, 64)), the retried attempts at 900 ms ([512, 1024)).
    expect(hour.run?.count).toBe(hour.totals.completed + 60);
    expect(hour.run?.p50).toBeGreaterThanOrEqual(32);
    expect(hour.run?.p50).toBeLessThan(64);
    expect(hour.run?.p99).toBeGreaterThanOrEqual(512);
    expect(hour.wait?.p50).toBeGreaterThanOrEqual(2);
    expect(hour.wait?.p50).toBeLessThan(4);

    // The last day in 5-minute steps: 288 of them, only the last day's minutes.
    const day = await readQueueTimeline(redis, 'tw', 'mail', '24h', { now });
    expect(day.points).toHaveLength(288);
    let expected = 0;
    for (let m = lastMinute - 1439; m <= lastMinute; m++) expected += perMinute(m);
    expect(day.totals.completed).toBe(expected);
    expect(day.totals.retried).toBe(1440);

    // Hours: the 4 days written, every hour exactly its own minutes (plus the very first job at T0).
    const month = await readQueueTimeline(redis, 'tw', 'mail', '30d', { now });
    expect(month.points).toHaveLength(720);
    let all = 1;
    for (let m = 0; m <= lastMinute; m++) all += perMinute(m);
    expect(month.totals.completed).toBe(all);
    expect(month.totals.deadLettered).toBe(3 * 144);
  });

  it('wraps the hour ring after 30 days and leaves out a write older than its slot', async () => {
    const w = writer();
    const s = w.schedule('reports.daily');
    const key = timelineKeyOf('tw', 'reports.daily');
    let first = 0;
    // 31 days, one run an hour: hour h's run starts h mod 5 s late.
    for (let h = 0; h < 31 * 24; h++) {
      now = T0 + h * HOUR + 60_000;
      s.lag((h % 5) * 1000);
      s.ended('completed', 2000);
      await w.flush();
      if (h === 0) first = await usage(key);
    }
    console.log(`timeline bytes: schedule ${layoutBytes(SCHEDULE_LAYOUT)} B value, MEMORY USAGE ${await usage(key)} B after 31 days of hours`);
    expect(await usage(key)).toBe(first);
    const month = await readScheduleTimeline(redis, 'tw', 'reports.daily', '30d', { now });
    expect(month.points).toHaveLength(720);
    // One run per hour in every slot, never two: the first day's hours were overwritten, not added to.
    expect(month.points.every((p) => p.completed === 1)).toBe(true);
    expect(month.totals.completed).toBe(720);
    expect(month.lag.count).toBe(720);
    const day = await readScheduleTimeline(redis, 'tw', 'reports.daily', '24h', { now });
    expect(day.points).toHaveLength(24);
    expect(day.run.p50).toBeGreaterThanOrEqual(1024);
    expect(day.run.p50).toBeLessThan(2048);

    // A write for an hour 30 days older than the slot's is left out; the slot keeps its hour.
    now = T0 + 60_000; // the first hour again: slot 0 now holds hour 720
    s.ended('failed', 10);
    await w.flush();
    const after = await readScheduleTimeline(redis, 'tw', 'reports.daily', '30d', { now: T0 + (31 * 24 - 1) * HOUR });
    expect(after.totals).toMatchObject({ completed: 720, failed: 0 });
  });

  it('adds up many workers writing the same minute, and reads percentiles from the merged buckets', async () => {
    now = T0 + 30_000;
    const workers = [writer(), writer(), writer()];
    workers.forEach((w, i) => {
      for (let j = 0; j < 100; j++) w.queue('img').attempt('completed', i === 2 ? 3000 : 10, 0);
    });
    await Promise.all(workers.map((w) => w.flush()));
    const v = await readQueueTimeline(redis, 'tw', 'img', '1h', { now, histograms: true });
    expect(v.totals.completed).toBe(300);
    // 200 runs at 10 ms, 100 at 3 s: p50 in [8, 16), p95 in [2048, 4096).
    expect(v.run?.p50).toBeGreaterThanOrEqual(8);
    expect(v.run?.p50).toBeLessThan(16);
    expect(v.run?.p95).toBeGreaterThanOrEqual(2048);
    expect(v.run?.p95).toBeLessThan(4096);
  });

  it('samples Redis memory into minutes and hours, keeping the larger sample of a minute', async () => {
    now = T0 + 10_000;
    const info = await sampleMemory(redis, 'tw', now);
    await sampleMemory(redis, 'tw', now + 20_000);
    const key = memoryTimelineKey('tw');
    expect(await redis.strlen(key)).toBe(layoutBytes(MEMORY_LAYOUT));
    console.log(`timeline bytes: redis memory ${layoutBytes(MEMORY_LAYOUT)} B value, MEMORY USAGE ${await usage(key)} B`);
    const v = await readMemoryTimeline(redis, 'tw', '1h', { now: now + 20_000 });
    const sampled = v.points.filter((p) => p.usedBytes !== null);
    expect(sampled).toHaveLength(1);
    expect(sampled[0]?.usedBytes).toBeGreaterThanOrEqual(Math.ceil(info.usedBytes / 1024) * 1024);
    expect(sampled[0]?.maxBytes).toBe(Math.ceil(info.maxBytes / 1024) * 1024);
  });

  it('keeps the counts of a write that failed and writes them with the next flush', async () => {
    now = T0 + 5000;
    const w = writer();
    const key = queueTimelineKey(redis, 'tw', 'blocked');
    await redis.hset(key, 'x', '1'); // a key of another type: the script fails (WRONGTYPE)
    w.queue('blocked').attempt('completed', 1, 1);
    await w.flush();
    expect(await redis.type(key)).toBe('hash');
    await redis.del(key);
    now += MIN;
    w.queue('blocked').attempt('completed', 1, 1);
    await w.flush();
    const v = await readQueueTimeline(redis, 'tw', 'blocked', '1h', { now });
    expect(v.points.slice(-2).map((p) => p.completed)).toEqual([1, 1]);
  });

  it('a writer with nothing counted sends nothing, and one TTL keeps a gone queue from holding its bytes', async () => {
    const w = writer();
    w.queue('quiet');
    await w.flush();
    expect(await redis.exists(queueTimelineKey(redis, 'tw', 'quiet'))).toBe(0);
    now = T0;
    w.queue('quiet').attempt('completed', 1, 1);
    await w.stop();
    const ttl = await redis.pttl(queueTimelineKey(redis, 'tw', 'quiet'));
    expect(ttl).toBeGreaterThan(30 * 24 * HOUR);
  });
});

describe('timelines on Redis Cluster', { timeout: 120_000 }, () => {
  let t: TestRedis;
  beforeAll(async () => {
    t = await startTestRedis('cluster');
  });
  afterAll(async () => {
    await t?.stop();
  });

  it('writes many queues and schedules in one flush (each key in its own slot) and reads them back', async () => {
    const redis = t.connect('command');
    const now = Date.UTC(2026, 5, 1, 12, 0, 30);
    const w = new TimelineWriter({ redis, prefix: 'tw', log, clock: () => now });
    const queues = Array.from({ length: 8 }, (_, i) => `q${i}`);
    queues.forEach((q, i) => {
      for (let j = 0; j <= i; j++) w.queue(q).attempt('completed', 5, 5);
    });
    w.schedule('s.one').ended('completed', 5);
    await w.flush();
    expect(queueTimelineKey(redis, 'tw', 'q1')).toBe('tw:{q1}:timeline:q1');
    for (const [i, q] of queues.entries()) expect((await readQueueTimeline(redis, 'tw', q, '1h', { now })).totals.completed, q).toBe(i + 1);
    expect((await readScheduleTimeline(redis, 'tw', 's.one', '24h', { now })).totals.completed).toBe(1);
    await sampleMemory(redis, 'tw', now);
    expect((await readMemoryTimeline(redis, 'tw', '1h', { now })).written).toBe(true);
  });
});
