/**
 * Five scheduler processes started at once over 10,000 runtime schedules, two of them killed -9 and
 * restarted midway: each occurrence is enqueued and run exactly once, or recorded missed by its policy (or
 * skipped while its previous run was still going, by its overlap policy).
 * Shortened from the issue's "every second for a minute" to fit a shared 2-core machine: each schedule
 * fires every 20 s (offsets spread over the 20 s, so ~500 occurrences/s) for about 40 s; the assertion
 * is the same one, per schedule over every occurrence from its first to its last.
 */
import { createCatalog, createLogger, QueueSet } from '@tickwork/core';
import { createSchedules, readHistory, type OccurrenceRecord } from '@tickwork/schedules';
import { startRedisServer, waitFor, type AppProcess, type RedisServerHandle } from '@tickwork/testkit';
import type { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fixtureApps } from './testing/fixture-apps.js';
import { FX_TENANT_RUNS_KEY, fxTenant } from './testing/fixture-catalog.js';

const PREFIX = 'rr';
const SCHEDULES = 10_000;
const PERIOD_S = 20;
let server: RedisServerHandle;
let redis: Redis;
const apps = fixtureApps(() => server.url, PREFIX);
const env = { SCHEDULE_TICK_MS: '250', SCHEDULE_LOOKAHEAD_MS: '1000', SCHEDULE_LEASE_MS: '2000', SCHEDULE_GRACE_MS: '60000' };

beforeAll(async () => {
  server = await startRedisServer();
  redis = server.client();
});
afterAll(async () => {
  await apps.killAll();
  await server.stop();
});

/**
 * Six node processes starting at once on a shared 2-core machine can take a while: a generous deadline. The
 * run counts below are waited for with generous deadlines too: on a busy machine (CI runs three test files
 * at a time) the processes run the occurrences slower than they fire, and the missed policy covers that.
 */
const ready = (a: AppProcess, what: string) => a.waitForLog((l) => l.msg === 'scheduler ready' || l.msg === 'worker ready', what, 90_000);
const id = (i: number) => `tenant:${String(i).padStart(5, '0')}`;

/**
 * A skipped-overlap is the schedule's policy at work only while the run it names (in its reason) was going:
 * started by the skip, and not ended more than OVERLAP_MARGIN_MS before it (the run frees its slot just after
 * its end is recorded; on a loaded machine that can take a while). On a loaded machine a run can outlast the
 * 20 s to the next occurrence; a slot left held after its run ended cannot pass.
 */
const OVERLAP_MARGIN_MS = 5000;
function overlapped(skipped: OccurrenceRecord, history: OccurrenceRecord[]): boolean {
  const holder = history.find((h) => h.id === /still running: (\S+)$/.exec(skipped.error ?? '')?.[1]);
  const at = Date.parse(skipped.endedAt ?? '');
  if (!holder?.startedAt || Number.isNaN(at)) return false;
  return Date.parse(holder.startedAt) <= at && (holder.endedAt === undefined || Date.parse(holder.endedAt) >= at - OVERLAP_MARGIN_MS);
}

describe('runtime schedules under five scheduler replicas with kill -9', { timeout: 480_000 }, () => {
  it('enqueues and runs each occurrence exactly once, or records it missed', async () => {
    const log = createLogger('test', 'silent');
    const queues = new QueueSet(redis, PREFIX, log);
    const store = createSchedules({ redis, queues, catalog: createCatalog([fxTenant]), log });
    for (let i = 0; i < SCHEDULES; i += 500) {
      await Promise.all(
        Array.from({ length: 500 }, (_, j) => store.upsert(id(i + j), { job: fxTenant, pattern: `${(i + j) % PERIOD_S}/${PERIOD_S} * * * * *`, tz: 'UTC', data: { tenant: id(i + j) }, history: 20 })),
      );
    }
    expect(await store.count()).toBe(SCHEDULES);

    const start = (extra: Record<string, string> = {}) => apps.start('scheduler', { ...env, ...extra });
    const schedulers: AppProcess[] = await Promise.all([1, 2, 3, 4, 5].map(() => start()));
    const worker = await apps.start('worker', { ...env, WORKER_CONCURRENCY: '100', WORKER_QUEUES: 'fxt' });
    await Promise.all([...schedulers, worker].map((a, i) => ready(a, `app ${i} ready`)));
    const ran = async () => redis.hlen(FX_TENANT_RUNS_KEY);
    await waitFor(async () => (await ran()) >= 3000, { timeoutMs: 120_000, intervalMs: 250, what: '3,000 runs before the kill' });
    await Promise.all([schedulers[0]?.stop('SIGKILL'), schedulers[1]?.stop('SIGKILL')]);
    const killedAt = await ran();
    await waitFor(async () => (await ran()) >= killedAt + 2000, { timeoutMs: 90_000, intervalMs: 250, what: 'runs going on with three schedulers' });
    const restarted = await Promise.all([start(), start()]);
    await Promise.all(restarted.map((a) => ready(a, 'restarted ready')));
    await waitFor(async () => (await ran()) >= killedAt + 8000, { timeoutMs: 120_000, intervalMs: 250, what: 'runs after the restart' });
    // Stopped side by side: each commits what it holds on its own (up to a second each, one after another).
    const live = [...schedulers.slice(2), ...restarted];
    expect(await Promise.all(live.map((s) => s.stop('SIGTERM')))).toEqual(live.map(() => 0));
    await waitFor(async () => (await queues.get('fxt').getJobCountByTypes('wait', 'active', 'delayed', 'prioritized')) === 0, {
      timeoutMs: 60_000,
      what: 'the worker to finish every enqueued occurrence',
    });
    expect(await worker.stop('SIGTERM')).toBe(0);

    const counts = await redis.hgetall(FX_TENANT_RUNS_KEY);
    expect(Object.values(counts).filter((c) => c !== '1')).toEqual([]); // nothing ran twice
    // Per schedule: every occurrence from its first to its last recorded is there once, run or missed.
    const unsettled: string[] = [];
    const gaps: string[] = [];
    for (let i = 0; i < SCHEDULES; i += 97) {
      const history = (await readHistory(redis, PREFIX, id(i), 20)).reverse();
      const seconds = history.map((h) => Date.parse(h.nominal) / 1000);
      seconds.forEach((s, k) => k > 0 && s - (seconds[k - 1] ?? 0) !== PERIOD_S && gaps.push(`${id(i)}@${s}`));
      for (const h of history) {
        const settled =
          h.outcome === 'missed' || ((h.outcome === 'completed' || h.outcome === 'caught-up') && counts[h.id] === '1') || (h.outcome === 'skipped-overlap' && overlapped(h, history));
        if (!settled) unsettled.push(`${h.id}:${h.outcome ?? 'none'}${h.error ? ` (${h.error})` : ''}`);
      }
    }
    expect(gaps).toEqual([]);
    expect(unsettled).toEqual([]);
    await queues.close();
  });
});
