import { Writable } from 'node:stream';
import { alertsEmitted, createAlerter, type ScheduleHealthAlert, type SlowRunAlert } from '@tickwork/operations';
import { createCatalog, defineJob, occurrenceKey } from '@tickwork/core';
import { mergeOccurrence, scheduleHealthy, scheduleLastSuccess, scheduleSlowRuns } from '@tickwork/schedules';
import { startRedisServer, type RedisServerHandle } from '@tickwork/testkit';
import type { Redis } from 'ioredis';
import { pino } from 'pino';
import { z } from 'zod';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { watchSchedules, watchdogStatusKey } from './watchdog.js';

const PREFIX = 'wd';
const minutely = defineJob({
  name: 'wd.minutely',
  queue: 'wd',
  schema: z.object({}),
  schedule: { pattern: '* * * * *', tz: 'UTC' },
  handler: async () => undefined,
});
const hourly = defineJob({
  name: 'wd.hourly',
  queue: 'wd',
  schema: z.object({}),
  schedule: { pattern: '0 * * * *', tz: 'UTC', slowAfter: { minutes: 5 } },
  handler: async () => undefined,
});
const fresh = defineJob({ name: 'wd.fresh', queue: 'wd', schema: z.object({}), schedule: { pattern: '0 * * * *', tz: 'UTC' }, handler: async () => undefined });
const catalog = createCatalog([minutely, fresh, hourly]);
const silent = pino({ level: 'silent' });

let server: RedisServerHandle;
let redis: Redis;
beforeAll(async () => {
  server = await startRedisServer();
  redis = server.client();
});
beforeEach(async () => {
  await redis.flushdb();
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
async function watchAll(replicas: number, now: Date): Promise<(ScheduleHealthAlert | SlowRunAlert)[]> {
  const alerts: (ScheduleHealthAlert | SlowRunAlert)[] = [];
  const alerter = { scheduleHealth: (a: ScheduleHealthAlert | SlowRunAlert) => void alerts.push(a) };
  await Promise.all(Array.from({ length: replicas }, () => watchSchedules({ catalog, redis, prefix: PREFIX, log: silent, alerter }, now)));
  return alerts;
}

const gauge = async (g: typeof scheduleHealthy, schedule: string) => (await g.get()).values.find((v) => v.labels.schedule === schedule)?.value;

describe('the schedule watchdog (dead-man\'s switch)', () => {
  it('alerts once when a schedule stops succeeding, however many replicas watch, and once when it recovers', async () => {
    const t0 = new Date('2026-06-01T10:00:01Z');
    await succeeded(t0);

    // 90 s later the last success is recent: ok, nothing to say.
    expect((await watchAll(3, new Date(t0.getTime() + 90_000))).filter((a) => a.schedule === minutely.name)).toEqual([]);
    expect(await redis.hget(watchdogStatusKey(PREFIX), minutely.name)).toBe('ok');
    expect(await gauge(scheduleHealthy, minutely.name)).toBe(1);
    expect(await gauge(scheduleLastSuccess, minutely.name)).toBe(t0.getTime() / 1000);

    // 10 minutes without a success: stale. Three replicas notice; one alert.
    const later = new Date(t0.getTime() + 10 * 60_000);
    const stale = (await watchAll(3, later)).filter((a): a is ScheduleHealthAlert => a.schedule === minutely.name && a.type !== 'schedule_slow_run');
    expect(stale).toHaveLength(1);
    expect(stale[0]).toMatchObject({ type: 'schedule_stale', schedule: 'wd.minutely', queue: 'wd', lastSuccessAt: t0.toISOString() });
    expect(stale[0]?.lastExpectedAt).toBe('2026-06-01T10:10:00.000Z');
    expect(stale[0]?.message).toContain('has not succeeded within two intervals');
    expect(await gauge(scheduleHealthy, minutely.name)).toBe(0);
    // Still stale a minute on: no repeat.
    expect((await watchAll(3, new Date(later.getTime() + 60_000))).filter((a) => a.schedule === minutely.name)).toEqual([]);

    // It runs again: one all-clear.
    const back = new Date(later.getTime() + 2 * 60_000);
    await succeeded(back);
    const recovered = (await watchAll(3, new Date(back.getTime() + 10_000))).filter((a) => a.schedule === minutely.name);
    expect(recovered).toEqual([expect.objectContaining({ type: 'schedule_recovered', schedule: 'wd.minutely', lastSuccessAt: back.toISOString() })]);
    expect(await gauge(scheduleHealthy, minutely.name)).toBe(1);
  });

  it("alerts once on a run still going after the schedule's slowAfter, and counts it while it runs", async () => {
    const nominal = new Date('2026-06-03T09:00:00Z');
    const started = new Date('2026-06-03T09:00:02Z');
    const id = occurrenceKey(hourly.name, nominal);
    const defaults = { id, schedule: hourly.name, nominal: nominal.toISOString(), trigger: 'schedule' as const };
    await mergeOccurrence(redis, PREFIX, hourly.name, id, nominal.getTime(), { startedAt: started.toISOString(), attempts: 1 }, defaults);
    const slowOnes = async (now: Date) => (await watchAll(3, now)).filter((a): a is SlowRunAlert => a.type === 'schedule_slow_run');

    expect(await slowOnes(new Date(started.getTime() + 4 * 60_000))).toEqual([]);
    expect(await gauge(scheduleSlowRuns, hourly.name)).toBe(0);
    const slow = await slowOnes(new Date(started.getTime() + 6 * 60_000));
    expect(slow).toEqual([
      expect.objectContaining({ schedule: 'wd.hourly', occurrence: id, startedAt: started.toISOString(), runningForMs: 6 * 60_000, slowAfterMs: 5 * 60_000 }),
    ]);
    expect(await gauge(scheduleSlowRuns, hourly.name)).toBe(1);
    expect(await slowOnes(new Date(started.getTime() + 9 * 60_000))).toEqual([]); // once per occurrence

    await mergeOccurrence(redis, PREFIX, hourly.name, id, nominal.getTime(), { endedAt: new Date(started.getTime() + 10 * 60_000).toISOString(), outcome: 'completed' }, defaults, 'lastSuccess');
    await watchAll(1, new Date(started.getTime() + 11 * 60_000));
    expect(await gauge(scheduleSlowRuns, hourly.name)).toBe(0);
  });

  it('gives the all-clear only on a success: a stale schedule whose next run fails is not cleared', async () => {
    const t = new Date('2026-06-05T10:00:01Z');
    await succeeded(t);
    const staleAt = new Date(t.getTime() + 10 * 60_000);
    expect((await watchAll(2, staleAt)).filter((a) => a.schedule === minutely.name).map((a) => a.type)).toEqual(['schedule_stale']);
    // A run happens but fails: failing (the DLQ alerts on it), still not recovered.
    const failedAt = new Date(staleAt.getTime() + 30_000);
    const nominal = new Date(Math.floor(failedAt.getTime() / 60_000) * 60_000);
    await mergeOccurrence(redis, PREFIX, minutely.name, occurrenceKey(minutely.name, nominal), nominal.getTime(),
      { endedAt: failedAt.toISOString(), outcome: 'failed', error: 'db down' }, { schedule: minutely.name, nominal: nominal.toISOString(), trigger: 'schedule' }, 'lastFailure');
    expect((await watchAll(2, new Date(failedAt.getTime() + 5_000))).filter((a) => a.schedule === minutely.name)).toEqual([]);
    expect(await redis.hget(watchdogStatusKey(PREFIX), minutely.name)).toBe('failing');
    // Then one succeeds: the all-clear, once.
    const okAt = new Date(failedAt.getTime() + 60_000);
    await succeeded(okAt);
    expect((await watchAll(2, new Date(okAt.getTime() + 5_000))).filter((a) => a.schedule === minutely.name).map((a) => a.type)).toEqual(['schedule_recovered']);
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
    await succeeded(new Date('2026-06-01T10:00:01Z'));
    await watchSchedules({ catalog, redis, prefix: PREFIX, log: silent, alerter }, new Date('2026-06-02T00:00:00Z'));
    const alert = lines.find((l) => l.msg === 'alert')?.alert as ScheduleHealthAlert | undefined;
    expect(alert).toMatchObject({ type: 'schedule_stale', schedule: 'wd.minutely' });
    expect((await alertsEmitted.get()).values.find((v) => v.labels.type === 'schedule_stale')?.value).toBe(before + 1);
  });
});
