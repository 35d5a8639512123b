import {
  claimOccurrences,
  createCatalog,
  createLogger,
  defineJob,
  occurrenceJobId,
  occurrenceKey,
  QueueSet,
  readHistory,
  scheduledRunOf,
  scheduleRegistryKey,
  type ScheduleSpec,
} from '@tickwork/runtime';
import { startRedisServer, type RedisServerHandle } from '@tickwork/testkit';
import type { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { reconcileSchedules } from './reconcile.js';
import { tickSchedule, type TickDeps } from './tick.js';

let server: RedisServerHandle;
let redis: Redis;
const log = createLogger('test', 'silent');
const queueSets: QueueSet[] = [];
const MIN = 60_000;
const T0 = Date.parse('2026-05-01T00:00:00Z');

beforeAll(async () => {
  server = await startRedisServer();
  redis = server.client();
});
afterAll(async () => {
  await Promise.all(queueSets.map((q) => q.close()));
  await redis.quit();
  await server.stop();
});

let n = 0;
function setup(schedule: Partial<ScheduleSpec> = {}) {
  const prefix = `t${++n}`;
  const queues = new QueueSet(redis, prefix, log);
  queueSets.push(queues);
  const job = defineJob({
    name: 'minutely',
    queue: 'q',
    schema: z.object({}),
    schedule: { pattern: '* * * * *', tz: 'UTC', ...schedule } as ScheduleSpec,
    handler: async () => undefined,
  });
  const deps: TickDeps = { queues, redis, log, graceMs: 10_000, lookaheadMs: 0 };
  return { prefix, queues, job, deps };
}

/** Scheduler ran at T0, then scheduler and workers were down for 10 occurrences; returns what happened after. */
async function outage(schedule: Partial<ScheduleSpec>) {
  const s = setup(schedule);
  await tickSchedule(s.deps, s.job, T0);
  const result = await tickSchedule(s.deps, s.job, T0 + 10 * MIN + 30_000);
  const history = await readHistory(redis, s.prefix, s.job.name);
  const outcome = (m: number) => history.find((r) => r.nominal === new Date(T0 + m * MIN).toISOString());
  const jobs = await s.queues.get('q').getJobs(['delayed', 'wait'], 0, -1);
  const runs = jobs
    .map((j) => scheduledRunOf(j.opts))
    .map((r) => `${((r?.nominal ?? 0) - T0) / MIN}${r?.catchUp ? ':catch-up' : ''}`)
    .sort((a, b) => parseInt(a) - parseInt(b));
  return { result, history, outcome, runs };
}

describe('missed-run catch-up after an outage of 10 occurrences', () => {
  it('skip: records all 10 as missed and runs none', async () => {
    const { result, runs, outcome } = await outage({ missed: 'skip' });
    expect(result).toMatchObject({ enqueued: 0, caughtUp: 0, missed: 10 });
    expect(runs).toEqual([]);
    for (let m = 1; m <= 10; m++) expect(outcome(m)?.outcome).toBe('missed');
  });

  it('once: runs the latest as a catch-up with its nominal time, records 9 as missed', async () => {
    const { result, runs, outcome } = await outage({ missed: 'once' });
    expect(result).toMatchObject({ caughtUp: 1, missed: 9 });
    expect(runs).toEqual(['10:catch-up']);
    expect(outcome(10)).toMatchObject({ trigger: 'catch-up', jobId: occurrenceJobId('minutely', new Date(T0 + 10 * MIN)) });
    expect(outcome(10)?.enqueuedAt).toBeDefined();
    expect(outcome(9)?.outcome).toBe('missed');
  });

  it('all: runs at most maxCatchUp (the latest)', async () => {
    const { result, runs, outcome } = await outage({ missed: 'all', maxCatchUp: 3, catchUpWindow: { hours: 1 } });
    expect(result).toMatchObject({ caughtUp: 3, missed: 7 });
    expect(runs).toEqual(['8:catch-up', '9:catch-up', '10:catch-up']);
    expect(outcome(7)?.outcome).toBe('missed');
  });

  it('all: runs only what is inside the catch-up window', async () => {
    const { result, runs } = await outage({ missed: 'all', maxCatchUp: 100, catchUpWindow: { minutes: 4 } });
    expect(result).toMatchObject({ caughtUp: 4, missed: 6 });
    expect(runs).toEqual(['7:catch-up', '8:catch-up', '9:catch-up', '10:catch-up']);
  });

  it('a first start records nothing as missed, and on-time occurrences are enqueued delayed to their time', async () => {
    const s = setup({ missed: 'all' });
    expect(await tickSchedule(s.deps, s.job, T0 - 1)).toMatchObject({ enqueued: 0, missed: 0 });
    const result = await tickSchedule({ ...s.deps, lookaheadMs: 2 * MIN }, s.job, T0 + 5_000);
    expect(result).toMatchObject({ enqueued: 3, caughtUp: 0, missed: 0 });
    const job = await s.queues.get('q').getJob(occurrenceJobId('minutely', new Date(T0 + 2 * MIN)));
    expect(scheduledRunOf(job?.opts)).toEqual({ schedule: 'minutely', nominal: T0 + 2 * MIN, catchUp: false });
  });
});

describe('replicas', () => {
  it('three schedulers ticking at once enqueue and record each occurrence once', async () => {
    const s = setup({ missed: 'all', maxCatchUp: 5 });
    await tickSchedule(s.deps, s.job, T0);
    const results = await Promise.all([1, 2, 3].map(() => tickSchedule(s.deps, s.job, T0 + 8 * MIN + 1000)));
    // 8 occurrences: the last is within grace (on time), 3..7 are caught up (maxCatchUp 5), 1..2 are missed
    expect(results.reduce((sum, r) => sum + r.enqueued, 0)).toBe(1);
    expect(results.reduce((sum, r) => sum + r.caughtUp, 0)).toBe(5);
    expect(results.reduce((sum, r) => sum + r.missed, 0)).toBe(2);
    expect(await s.queues.get('q').getJobCountByTypes('delayed', 'wait')).toBe(6);
    expect(await readHistory(redis, s.prefix, s.job.name)).toHaveLength(8);
  });

  it('an occurrence claimed by a replica that died before enqueuing is re-enqueued once', async () => {
    const s = setup();
    await tickSchedule(s.deps, s.job, T0);
    const at = new Date(T0 + MIN);
    const claimedAt = new Date(T0 + MIN - 30_000).toISOString();
    const claimed = await claimOccurrences(redis, s.prefix, s.job.name, {
      expectedCursor: String(T0),
      newCursor: at.getTime(),
      records: [{ id: occurrenceKey('minutely', at), schedule: 'minutely', nominal: at.toISOString(), trigger: 'schedule', claimedAt }],
    });
    expect(claimed).toBe(true);
    const repaired = await Promise.all([1, 2].map(() => tickSchedule(s.deps, s.job, T0 + MIN + 1000)));
    expect(repaired.reduce((sum, r) => sum + r.repaired, 0)).toBeGreaterThanOrEqual(1);
    expect(await s.queues.get('q').getJobCountByTypes('delayed', 'wait')).toBe(1);
    expect((await readHistory(redis, s.prefix, 'minutely'))[0]?.enqueuedAt).toBeDefined();
  });
});

describe('reconcile', () => {
  it('leaves exactly one registration per scheduled job and removes ghosts with their pending jobs', async () => {
    const s = setup();
    const catalog = createCatalog([s.job]);
    const registry = scheduleRegistryKey(s.prefix);
    await redis.hset(registry, 'ghost.job', JSON.stringify({ queue: 'q' }));
    const ghostJobId = occurrenceJobId('ghost.job', new Date(T0));
    await s.queues.get('q').add('ghost.job', {}, { jobId: ghostJobId, delay: 60_000 });
    await s.queues.get('q').upsertJobScheduler('legacy', { every: 60_000 }, { name: 'legacy' });

    const results = await Promise.all([1, 2, 3].map(() => reconcileSchedules({ catalog, queues: s.queues, redis, log })));
    expect(Object.keys(await redis.hgetall(registry))).toEqual(['minutely']);
    expect(results.flatMap((r) => r.removed.map((x) => x.id)).sort()).toEqual(['ghost.job', 'legacy']);
    expect(await s.queues.get('q').getJob(ghostJobId)).toBeUndefined();
    expect(await s.queues.get('q').getJobSchedulers(0, -1)).toEqual([]);
    expect(results[0]?.registered.map((r) => r.id)).toEqual(['minutely']);
  });
});
