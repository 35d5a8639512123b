import { createCatalog, readMemoryInfo } from '@tickwork/core';
import { redisComponentBytes, redisMemoryRatio, type RedisMemoryAlert } from '@tickwork/operations';
import { startRedisServer, waitFor, type RedisServerHandle } from '@tickwork/testkit';
import type { Redis } from 'ioredis';
import { pino } from 'pino';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { capacityStatusKey, createCapacityWatch, judgeMemory } from './capacity-watch.js';
import { fixtureApps, waitReady } from './testing/fixture-apps.js';

const PREFIX = 'cw';
const MiB = 1024 * 1024;
const silent = pino({ level: 'silent' });

let server: RedisServerHandle;
let redis: Redis;
beforeAll(async () => {
  server = await startRedisServer();
  redis = server.client();
});
beforeEach(async () => {
  await redis.config('SET', 'maxmemory', '0');
  await redis.flushdb();
});
afterAll(async () => {
  await server.stop();
});

/** `replicas` schedulers' capacity watches checking at the same moment; returns every alert they raised. */
function replicas(count: number) {
  const alerts: RedisMemoryAlert[] = [];
  const watches = Array.from({ length: count }, () =>
    createCapacityWatch({ redis, prefix: PREFIX, catalog: createCatalog([]), log: silent, alerter: { redisMemory: (a) => void alerts.push(a) }, alertRatio: 0.8, samples: 200 }),
  );
  return {
    async check(): Promise<RedisMemoryAlert[]> {
      const before = alerts.length;
      await Promise.all(watches.map((w) => w.check()));
      return alerts.slice(before);
    },
  };
}

const FILL = `for i = tonumber(ARGV[1]), tonumber(ARGV[2]) do redis.call('SET', 'fill:' .. i, ARGV[3]) end`;
const UNFILL = `for i = tonumber(ARGV[1]), tonumber(ARGV[2]) do redis.call('DEL', 'fill:' .. i) end`;
const ratio = async () => (await readMemoryInfo(redis)).ratio ?? 0;

/** Writes 1 KiB strings until Redis uses `target` of its maxmemory, or refuses writes (OOM); returns how many. */
async function fillTo(target: number): Promise<number> {
  let n = 0;
  const deadline = Date.now() + 30_000;
  while ((await ratio()) < target) {
    if (Date.now() > deadline) throw new Error(`Redis did not reach ${target} of maxmemory within 30 s`);
    try {
      await redis.eval(FILL, 0, n + 1, n + 500, 'x'.repeat(1024));
    } catch (err) {
      if (/^OOM/.test((err as Error).message)) break;
      throw err;
    }
    n += 500;
  }
  return n;
}

describe('the Redis memory alert', () => {
  it('fires once when Redis passes 80% of maxmemory, however many schedulers check, and resolves once', async () => {
    await redis.config('SET', 'maxmemory', String((await readMemoryInfo(redis)).usedBytes + 20 * MiB));
    const schedulers = replicas(3);
    expect(await schedulers.check()).toEqual([]); // well below: nothing to say, not even "ok"
    expect(await redis.hget(capacityStatusKey(PREFIX), 'redis-memory')).toBe('ok');

    const filled = await fillTo(0.85);
    const high = await schedulers.check();
    expect(high).toEqual([expect.objectContaining({ type: 'redis_memory_high', threshold: 0.8 })]);
    expect(high[0]?.ratio).toBeGreaterThanOrEqual(0.8);
    expect(high[0]?.message).toContain('of its maxmemory (alert at 80.0%)');
    expect(await schedulers.check()).toEqual([]); // still high: no repeat
    // The gauges the same pass refreshed.
    expect((await redisMemoryRatio.get()).values[0]?.value).toBeGreaterThanOrEqual(0.8);
    expect((await redisComponentBytes.get()).values.find((v) => v.labels.component === 'not-tickwork')?.value).toBeGreaterThan(10 * MiB);

    await redis.eval(UNFILL, 0, 1, filled);
    await waitFor(async () => (await ratio()) < 0.5, { timeoutMs: 10_000, what: 'memory freed' });
    const ok = await schedulers.check();
    expect(ok).toEqual([expect.objectContaining({ type: 'redis_memory_ok', threshold: 0.8 })]);
    expect(await schedulers.check()).toEqual([]);
  });

  it('has hysteresis: high at the ratio, ok only 5 points below it, no judgement in between', () => {
    expect(judgeMemory(0.8, 0.8)).toBe('high');
    expect(judgeMemory(0.79, 0.8)).toBeNull();
    expect(judgeMemory(0.751, 0.8)).toBeNull();
    expect(judgeMemory(0.749, 0.8)).toBe('ok');
    expect(judgeMemory(null, 0.8)).toBeNull(); // no maxmemory: the start-up warning covers it
  });

  it('still alerts when Redis is already full and refuses the write that records the status: once per scheduler', async () => {
    await redis.config('SET', 'maxmemory', String((await readMemoryInfo(redis)).usedBytes + 4 * MiB));
    await fillTo(1.01); // stops when Redis refuses the fill
    expect(await ratio()).toBeGreaterThanOrEqual(1);
    const schedulers = replicas(2);
    expect((await schedulers.check()).map((a) => a.type)).toEqual(['redis_memory_high', 'redis_memory_high']);
    expect(await schedulers.check()).toEqual([]);
  });
});

describe('a real scheduler process', () => {
  const apps = fixtureApps(() => server.url, PREFIX);
  afterAll(() => apps.killAll());

  it('exports the capacity gauges in /metrics, refreshed on its interval', async () => {
    await redis.config('SET', 'maxmemory', String(512 * MiB));
    const scheduler = await apps.start('scheduler', { CAPACITY_CHECK_INTERVAL_MS: '300' });
    const ready = await waitReady(scheduler, 'scheduler ready');
    const metrics = async () => (await fetch(`http://127.0.0.1:${String(ready.port)}/metrics`)).text();
    const text = await waitFor(async () => {
      const t = await metrics();
      return /^tickwork_redis_component_bytes\{component="ledger"\}/m.test(t) && t;
    }, { timeoutMs: 15_000, what: 'capacity gauges in /metrics' });
    expect(text).toMatch(/^tickwork_redis_maxmemory_bytes 536870912$/m);
    expect(text).toMatch(/^tickwork_redis_used_memory_bytes \d+$/m);
    expect(text).toMatch(/^tickwork_redis_memory_ratio 0\.\d+$/m);
    expect(text).toMatch(/^tickwork_dlq_entries\{queue="fx"\} 0$/m);
    expect(text).toMatch(/^tickwork_dlq_oldest_age_seconds\{queue="fx"\} 0$/m);
    // Refreshed on the interval: a new maxmemory shows without a restart.
    await redis.config('SET', 'maxmemory', String(256 * MiB));
    await waitFor(async () => /^tickwork_redis_maxmemory_bytes 268435456$/m.test(await metrics()), { timeoutMs: 15_000, what: 'the gauge refreshed' });
    expect(await scheduler.stop('SIGTERM')).toBe(0);
  });
});
