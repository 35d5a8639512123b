import { Writable } from 'node:stream';
import {
  alertsEmitted,
  createAlerter,
  createCatalog,
  defineJob,
  mergeOccurrence,
  occurrenceKey,
  scheduleHealthy,
  scheduleLastSuccess,
  type ScheduleHealthAlert,
} from '@tickwork/runtime';
import { startRedisServer, type RedisServerHandle } from '@tickwork/testkit';
import type { Redis } from 'ioredis';
import { pino } from 'pino';
import { z } from 'zod';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { watchSchedules, watchdogStatusKey } from './watchdog.js';

const PREFIX = 'wd';
const minutely = defineJob({
  name: 'wd.minutely',
  queue: 'wd',
  schema: z.object({}),
  schedule: { pattern: '* * * * *', tz: 'UTC' },
  handler: async () => undefined,
});
const fresh = defineJob({ name: 'wd.fresh', queue: 'wd', schema: z.object({}), schedule: { pattern: '0 * * * *', tz: 'UTC' }, handler: async () => undefined });
const catalog = createCatalog([minutely, fresh]);
const silent = pino({ level: 'silent' });

let server: RedisServerHandle;
let redis: Redis;
beforeAll(async () => {
  server = await startRedisServer();
  redis = server.client();
});
afterAll(async () => {
  await server.stop();
});

async function succeeded(at: Date): Promise<void> {
  const nominal = new Date(Math.floor(at.getTime() / 60_000) * 60_000);
  await mergeOccurrence(
    redis,
    PREFIX,
    minutely.name,
    occurrenceKey(minutely.name, nominal),
    nominal.getTime(),
    { endedAt: at.toISOString(), outcome: 'completed' },
    { schedule: minutely.name, nominal: nominal.toISOString(), trigger: 'schedule' },
    'lastSuccess',
  );
}

/** `replicas` schedulers' watchdogs judging at the same moment; returns every alert they raised. */
async function watchAll(replicas: number, now: Date): Promise<ScheduleHealthAlert[]> {
  const alerts: ScheduleHealthAlert[] = [];
  const alerter = { scheduleHealth: (a: ScheduleHealthAlert) => void alerts.push(a) };
  await Promise.all(Array.from({ length: replicas }, () => watchSchedules({ catalog, redis, prefix: PREFIX, log: silent, alerter }, now)));
  return alerts;
}

const gauge = async (g: typeof scheduleHealthy, schedule: string) => (await g.get()).values.find((v) => v.labels.schedule === schedule)?.value;

describe('the schedule watchdog (dead-man\'s switch)', () => {
  it('alerts once when a schedule stops succeeding, however many replicas watch, and once when it recovers', async () => {
    const t0 = new Date('2026-06-01T10:00:01Z');
    await succeeded(t0);

    // 90 s later the last success is recent: ok, nothing to say.
    expect(await watchAll(3, new Date(t0.getTime() + 90_000))).toEqual([]);
    expect(await redis.hget(watchdogStatusKey(PREFIX), minutely.name)).toBe('ok');
    expect(await gauge(scheduleHealthy, minutely.name)).toBe(1);
    expect(await gauge(scheduleLastSuccess, minutely.name)).toBe(t0.getTime() / 1000);

    // 10 minutes without a success: stale. Three replicas notice; one alert.
    const later = new Date(t0.getTime() + 10 * 60_000);
    const stale = await watchAll(3, later);
    expect(stale).toHaveLength(1);
    expect(stale[0]).toMatchObject({ type: 'schedule_stale', schedule: 'wd.minutely', queue: 'wd', lastSuccessAt: t0.toISOString() });
    expect(stale[0]?.lastExpectedAt).toBe('2026-06-01T10:10:00.000Z');
    expect(stale[0]?.message).toContain('has not succeeded within two intervals');
    expect(await gauge(scheduleHealthy, minutely.name)).toBe(0);
    // Still stale a minute on: no repeat.
    expect(await watchAll(3, new Date(later.getTime() + 60_000))).toEqual([]);

    // It runs again: one all-clear.
    const back = new Date(later.getTime() + 2 * 60_000);
    await succeeded(back);
    const recovered = await watchAll(3, new Date(back.getTime() + 10_000));
    expect(recovered).toEqual([expect.objectContaining({ type: 'schedule_recovered', schedule: 'wd.minutely', lastSuccessAt: back.toISOString() })]);
    expect(await gauge(scheduleHealthy, minutely.name)).toBe(1);
  });

  it('says nothing of a schedule that has never run and is not yet overdue (waiting)', async () => {
    expect((await watchAll(2, new Date())).filter((a) => a.schedule === fresh.name)).toEqual([]);
    expect(await redis.hget(watchdogStatusKey(PREFIX), fresh.name)).toBe('waiting');
    expect(await gauge(scheduleLastSuccess, fresh.name)).toBe(0);
  });

  it('raises a stale schedule through the alerter: an `alert` log line and the alerts counter', async () => {
    const lines: Record<string, unknown>[] = [];
    const stream = new Writable({
      write(chunk: Buffer, _enc, done) {
        for (const l of chunk.toString('utf8').split('\n')) if (l.trim()) lines.push(JSON.parse(l) as Record<string, unknown>);
        done();
      },
    });
    const alerter = createAlerter({ log: pino({ level: 'info' }, stream), redis, prefix: PREFIX });
    const before = (await alertsEmitted.get()).values.find((v) => v.labels.type === 'schedule_stale')?.value ?? 0;
    await redis.del(watchdogStatusKey(PREFIX));
    await watchSchedules({ catalog, redis, prefix: PREFIX, log: silent, alerter }, new Date('2026-06-02T00:00:00Z'));
    const alert = lines.find((l) => l.msg === 'alert')?.alert as ScheduleHealthAlert | undefined;
    expect(alert).toMatchObject({ type: 'schedule_stale', schedule: 'wd.minutely' });
    expect((await alertsEmitted.get()).values.find((v) => v.labels.type === 'schedule_stale')?.value).toBe(before + 1);
  });
});
