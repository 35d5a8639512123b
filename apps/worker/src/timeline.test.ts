/**
 * The charts' history written by real worker (and scheduler) processes: every attempt counted in its
 * queue's timeline exactly once (completed, retried, failed for good, dead-lettered, with their run and wait
 * times), the last counts written on a graceful stop, nothing with CHART_HISTORY=off, and a catalog
 * schedule's timeline agreeing with its occurrence history run for run.
 */
import { isDeepStrictEqual } from 'node:util';
import { jobOptions } from '@tickwork/core';
import { listDeadLetters, memoryTimelineKey, queueTimelineKey, readMemoryTimeline, readQueueTimeline, readScheduleTimeline, type QueueTimelineView } from '@tickwork/operations';
import { readHistory } from '@tickwork/schedules';
import { appEntry, fixtureModule, freePort, startApp, waitFor } from '@tickwork/testkit';
import { TL_KEYS, TL_QUEUE, tlFail, tlOk, tlTick } from '@tickwork/testkit/fixtures/timeline-catalog';
import { describe, expect, it } from 'vitest';
import { useWorkerProcesses } from './testing/worker-processes.js';

const PREFIX = 'tickwork';
const w = useWorkerProcesses({ jobsModule: fixtureModule('timeline-catalog'), prefix: PREFIX });

const read = (histograms = true): Promise<QueueTimelineView> => readQueueTimeline(w.redis, PREFIX, TL_QUEUE, '1h', { histograms });
const add = async (ok: number, failing: number) => {
  const q = w.queues.get(TL_QUEUE);
  for (let n = 0; n < ok; n++) await q.add(tlOk.name, { n }, jobOptions(tlOk));
  for (let n = 0; n < failing; n++) await q.add(tlFail.name, { n }, jobOptions(tlFail));
};

describe('the worker writes the charts\' history', { timeout: 120_000 }, () => {
  it('counts each attempt once: completed, retried, failed for good, dead-lettered, with run and wait times', async () => {
    const worker = await w.start({ CHART_HISTORY_FLUSH_MS: '200' });
    await add(20, 5);
    // Each failing job: attempt 1 retried, attempt 2 failed for good, then moved to the DLQ.
    await waitFor(async () => (await listDeadLetters(w.queues, TL_QUEUE)).length === 5 && (await w.redis.llen(TL_KEYS.runs)) === 20, { timeoutMs: 60_000, what: '20 jobs run, 5 dead-lettered' });
    const expected = { completed: 20, retried: 5, failed: 5, deadLettered: 5 };
    const v = await waitFor(async () => {
      const r = await read();
      return isDeepStrictEqual(r.totals, expected) ? r : undefined;
    }, { timeoutMs: 30_000, what: `the timeline's totals to be ${JSON.stringify(expected)}` });
    // Run times of all 30 attempts; waits of the 25 first attempts only (a retry's wait is not known).
    expect(v.run?.count).toBe(30);
    expect(v.wait?.count).toBe(25);
    expect(v.run?.p50).not.toBeNull();
    // A graceful stop writes what is left, and counts nothing twice.
    expect(await worker.stop('SIGTERM')).toBe(0);
    const after = await read();
    expect(after.totals).toEqual(expected);
    expect(after.run?.count).toBe(30);
  });

  it('writes the counts not yet flushed when it stops gracefully', async () => {
    // A flush interval longer than the test: only the stop writes.
    const worker = await w.start({ CHART_HISTORY_FLUSH_MS: '600000' });
    await add(10, 0);
    await waitFor(async () => (await w.redis.llen(TL_KEYS.runs)) === 10, { timeoutMs: 60_000, what: '10 jobs run' });
    expect(await w.redis.exists(queueTimelineKey(w.redis, PREFIX, TL_QUEUE))).toBe(0);
    expect(await worker.stop('SIGTERM')).toBe(0);
    expect((await read(false)).totals).toEqual({ completed: 10, retried: 0, failed: 0, deadLettered: 0 });
  });

  it('counts nothing with CHART_HISTORY=off', async () => {
    const worker = await w.start({ CHART_HISTORY: 'off', CHART_HISTORY_FLUSH_MS: '100' });
    await add(3, 0);
    await waitFor(async () => (await w.redis.llen(TL_KEYS.runs)) === 3, { timeoutMs: 60_000, what: '3 jobs run' });
    expect(await worker.stop('SIGTERM')).toBe(0);
    expect(await w.redis.exists(queueTimelineKey(w.redis, PREFIX, TL_QUEUE))).toBe(0);
  });

  it("counts a catalog schedule's runs as its occurrence history records them, and the scheduler samples Redis memory", async () => {
    const worker = await w.start({ CHART_HISTORY_FLUSH_MS: '200' });
    const scheduler = w.track(startApp(appEntry('scheduler'), { REDIS_URL: w.server.url, JOBS_MODULE: fixtureModule('timeline-catalog'), PORT: String(await freePort()), LOG_LEVEL: 'info' }));
    await scheduler.waitForLog((l) => l.msg === 'scheduler ready', 'scheduler ready');
    await waitFor(async () => (await w.redis.llen(TL_KEYS.ticks)) >= 4, { timeoutMs: 60_000, what: '4 ticks run' });
    expect(await scheduler.stop('SIGTERM')).toBe(0);
    // Every occurrence enqueued has run before the worker stops (none left scheduled or running).
    await waitFor(async () => {
      const h = await readHistory(w.redis, PREFIX, tlTick.name, 500);
      return h.length > 0 && h.every((r) => r.outcome !== undefined);
    }, { timeoutMs: 30_000, what: 'every occurrence ended' });
    expect(await worker.stop('SIGTERM')).toBe(0);
    const history = await readHistory(w.redis, PREFIX, tlTick.name, 500);
    const ran = history.filter((r) => r.outcome === 'completed' || r.outcome === 'caught-up' || r.outcome === 'manual');
    const lagged = history.filter((r) => r.trigger !== 'manual' && r.startedAt !== undefined);
    const t = await readScheduleTimeline(w.redis, PREFIX, tlTick.name, '24h');
    expect(ran.length).toBeGreaterThanOrEqual(4);
    expect(t.totals).toEqual({ completed: ran.length, failed: 0, retried: 0, missed: history.filter((r) => r.outcome === 'missed').length, skipped: history.filter((r) => r.outcome?.startsWith('skipped')).length, cancelled: 0 });
    expect(t.lag.count).toBe(lagged.length);
    expect(t.run.count).toBe(ran.length);
    // The queue counts the same runs among its completions.
    expect((await read(false)).totals.completed).toBe(ran.length);
    // The scheduler sampled Redis memory at its start.
    expect(await w.redis.exists(memoryTimelineKey(PREFIX))).toBe(1);
    expect((await readMemoryTimeline(w.redis, PREFIX, '1h')).written).toBe(true);
  });
});
