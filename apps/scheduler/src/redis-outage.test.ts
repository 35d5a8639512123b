/**
 * Chaos: Redis is killed (-9) under two schedulers and a worker, stays down for several occurrences, and
 * restarts from its AOF. The apps reconnect by themselves; every second of the schedule from the first run
 * to the last is accounted for exactly once in its history (run on time, caught up, or recorded as missed
 * by its `missed: 'once'` policy), no occurrence runs twice, and every app still stops cleanly.
 */
import { createLogger, dlqName, QueueSet } from '@tickwork/core';
import { readHistory } from '@tickwork/schedules';
import { startRedisServer, waitFor, type RedisServerHandle } from '@tickwork/testkit';
import type { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fixtureApps, readRuns, waitReady } from './testing/fixture-apps.js';

const PREFIX = 'ro';

let server: RedisServerHandle;
let redis: Redis;
const apps = fixtureApps(() => server.url, PREFIX);

beforeAll(async () => {
  server = await startRedisServer({ appendonly: true });
  redis = server.client();
});
afterAll(async () => {
  await apps.killAll();
  await server.stop();
});

describe('a Redis crash under schedulers', { timeout: 120_000 }, () => {
  it('resumes the schedule with every occurrence run, caught up or recorded missed exactly once', async () => {
    // The worker's own late-run judgement is covered elsewhere; here it runs whatever the schedulers enqueue.
    const workerEnv = { SCHEDULE_GRACE_MS: '20000', WORKER_LOCK_DURATION_MS: '3000', WORKER_STALLED_INTERVAL_MS: '1000' };
    const watchdog = { SCHEDULE_WATCHDOG_INTERVAL_MS: '500' };
    const schedulers = [await apps.start('scheduler', watchdog), await apps.start('scheduler', watchdog)];
    const worker = await apps.start('worker', workerEnv);
    await Promise.all([...schedulers, worker].map((a, i) => waitReady(a, `app ${i} ready`)));
    await waitFor(async () => (await readRuns(redis)).length >= 3, { timeoutMs: 30_000, what: '3 runs before the crash' });

    await server.kill();
    const downAt = Date.now();
    // The outage itself (not a wait for work): several occurrences fall due while Redis is down.
    await new Promise((r) => setTimeout(r, 4000));
    await server.restart();
    const upAt = Date.now();
    const check = server.client();
    await waitFor(async () => (await readRuns(check)).some((r) => Date.parse(r.nominal) > upAt + 2000), {
      timeoutMs: 30_000,
      what: 'the schedule running on time again after the restart',
    });
    // The watchdog outlived the outage too: its gauges show a success after the restart.
    const port = (schedulers[0]?.logs().find((l) => l.msg === 'scheduler ready') as { port?: number } | undefined)?.port;
    const metric = async (name: string) => {
      const text = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
      return Number(new RegExp(`^${name}\\{schedule="fx\\.second"\\} (\\S+)$`, 'm').exec(text)?.[1]);
    };
    await waitFor(async () => (await metric('tickwork_schedule_last_success_timestamp_seconds')) * 1000 > upAt, {
      timeoutMs: 15_000,
      what: "the watchdog's gauge showing a success after the restart",
    });
    expect(await metric('tickwork_schedule_healthy')).toBe(1);

    // Stop the schedulers first (no new occurrences), then let the worker finish what is queued: runs cut
    // off by the crash come back as retries or redeliveries, and must end before the history is judged.
    for (const app of schedulers) expect(await app.stop('SIGTERM')).toBe(0);
    const queues = new QueueSet(check, PREFIX, createLogger('test', 'silent'));
    try {
      await waitFor(async () => (await queues.get('fx').getJobCountByTypes('wait', 'active', 'delayed', 'prioritized')) === 0, {
        timeoutMs: 60_000,
        what: 'the worker to finish every queued occurrence',
      });
      expect(await queues.get(dlqName('fx')).count()).toBe(0);
    } finally {
      await queues.close();
    }
    expect(await worker.stop('SIGTERM')).toBe(0);

    const done = await readRuns(check);
    const keys = done.map((r) => r.key);
    expect(new Set(keys).size).toBe(keys.length);
    const history = await readHistory(check, PREFIX, 'fx.second', 500);
    const first = Math.min(...done.map((r) => Date.parse(r.nominal)));
    const last = Math.max(...done.map((r) => Date.parse(r.nominal)));
    const inRange = history.filter((h) => Date.parse(h.nominal) >= first && Date.parse(h.nominal) <= last);
    // One record per second of the timeline, none twice, each with a final outcome.
    const seconds = inRange.map((h) => Date.parse(h.nominal)).sort((a, b) => a - b);
    expect(seconds).toEqual(seconds.map((_, i) => first + i * 1000));
    expect(seconds.at(-1)).toBe(last);
    const unsettled = inRange.filter((h) => h.outcome !== 'completed' && h.outcome !== 'caught-up' && h.outcome !== 'missed');
    expect(unsettled).toEqual([]);
    // What ran is exactly what the history says ran.
    const ran = inRange.filter((h) => h.outcome === 'completed' || h.outcome === 'caught-up').map((h) => h.nominal).sort();
    expect(ran, `history: ${JSON.stringify(inRange)}`).toEqual(done.map((r) => r.nominal).sort());
    // The outage left a mark: occurrences due while Redis was down were caught up or recorded missed.
    const outage = inRange.filter((h) => Date.parse(h.nominal) > downAt && Date.parse(h.nominal) < upAt - 1500);
    expect(outage.length).toBeGreaterThanOrEqual(2);
    expect(outage.some((h) => h.outcome === 'missed' || h.outcome === 'caught-up')).toBe(true);
  });
});
