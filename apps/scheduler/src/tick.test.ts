import { CLAIM, mergeOccurrence, occurrenceJobId, readHistory, shardKeys, shardOf } from '@tickwork/schedules';
import { occurrenceKey, runScript, scheduledRunOf, type ScheduleSpec } from '@tickwork/core';
import { describe, expect, it } from 'vitest';
import { useRedisPerFile } from './testing/redis-per-file.js';
import { KINDS, scheduleOf } from './testing/store-fixture.js';

const t = useRedisPerFile();
const queueSets = t.queueSets;
const MIN = 60_000;
const T0 = Date.parse('2026-05-01T00:00:00Z');


describe.each(KINDS)('%s schedules', (kind) => {
  async function setup(schedule: Partial<ScheduleSpec> = {}, createdAt = T0, opts: { lookaheadMs?: number; leaseMs?: number } = {}) {
    const s = await scheduleOf(t.redis, kind, { pattern: '* * * * *', tz: 'UTC', ...schedule } as ScheduleSpec, createdAt, opts);
    queueSets.push(s.queues);
    return s;
  }

  /** Created at T0, then no scheduler ran for 10 occurrences; returns what the first tick after did. */
  async function outage(schedule: Partial<ScheduleSpec>) {
    const s = await setup(schedule);
    const result = await s.dispatcher().tick(T0 + 10 * MIN + 30_000);
    const history = await readHistory(t.redis, s.prefix, s.id);
    const outcome = (m: number) => history.find((r) => r.nominal === new Date(T0 + m * MIN).toISOString());
    const jobs = await s.queues.get('q').getJobs(['delayed', 'wait'], 0, -1);
    const runs = jobs
      .map((j) => scheduledRunOf(j.opts))
      .map((r) => `${((r?.nominal ?? 0) - T0) / MIN}${r?.catchUp ? ':catch-up' : ''}`)
      .sort((a, b) => parseInt(a) - parseInt(b));
    return { s, result, history, outcome, runs };
  }

  describe('missed-run catch-up after an outage of 10 occurrences', () => {
    it('skip: records all 10 as missed and runs none', async () => {
      const { result, runs, outcome } = await outage({ missed: 'skip' });
      expect(result).toMatchObject({ enqueued: 0, caughtUp: 0, missed: 10 });
      expect(runs).toEqual([]);
      for (let m = 1; m <= 10; m++) expect(outcome(m)?.outcome).toBe('missed');
    });

    it('once: runs the latest as a catch-up with its nominal time, records 9 as missed', async () => {
      const { s, result, runs, outcome } = await outage({ missed: 'once' });
      expect(result).toMatchObject({ caughtUp: 1, missed: 9 });
      expect(runs).toEqual(['10:catch-up']);
      expect(outcome(10)).toMatchObject({ trigger: 'catch-up', jobId: occurrenceJobId(s.id, new Date(T0 + 10 * MIN)) });
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

    it('a new schedule records nothing as missed, and on-time occurrences are enqueued delayed to their time with deterministic ids', async () => {
      const s = await setup({ missed: 'all' }, T0 - 1, { lookaheadMs: 2 * MIN });
      const result = await s.dispatcher().tick(T0 + 5_000);
      expect(result).toMatchObject({ enqueued: 3, caughtUp: 0, missed: 0 });
      const jobId = occurrenceJobId(s.id, new Date(T0 + 2 * MIN));
      expect(jobId).toBe(kind === 'catalog' ? 'minutely@2026-05-01T000200.000Z' : 'tenant%3A7%3Aminutely@2026-05-01T000200.000Z');
      const job = await s.queues.get('q').getJob(jobId);
      expect(scheduledRunOf(job?.opts)).toMatchObject({ schedule: s.id, nominal: T0 + 2 * MIN, catchUp: false, v: 1 });
      // the due entry moved to the first occurrence after what was enqueued
      expect(Number(await t.redis.zscore(shardKeys(s.prefix, shardOf(s.id)).due, s.id))).toBe(T0 + 3 * MIN);
    });
  });

  describe('DST policy (America/New_York, 2026-03-08 spring forward, 2026-11-01 fall back)', () => {
    const ids = async (spec: Partial<ScheduleSpec>, from: string) => {
      const s = await setup({ tz: 'America/New_York', ...spec }, Date.parse(from), { lookaheadMs: 3 * 24 * 3600_000 });
      await s.dispatcher().tick(Date.parse(from));
      const jobs = await s.queues.get('q').getJobs(['delayed', 'wait'], 0, -1);
      return jobs.map((j) => new Date(scheduledRunOf(j.opts)?.nominal ?? 0).toISOString()).sort();
    };
    it('gap shift runs 02:30 at 03:30 EDT; gap skip drops it', async () => {
      expect(await ids({ pattern: '30 2 * * *' }, '2026-03-07T12:00:00Z')).toEqual(['2026-03-08T07:30:00.000Z', '2026-03-09T06:30:00.000Z', '2026-03-10T06:30:00.000Z']);
      expect(await ids({ pattern: '30 2 * * *', dst: { gap: 'skip' } }, '2026-03-07T12:00:00Z')).toEqual(['2026-03-09T06:30:00.000Z', '2026-03-10T06:30:00.000Z']);
    });
    it('fold once runs the first 01:30; fold twice both', async () => {
      expect(await ids({ pattern: '30 1 * * *' }, '2026-10-31T12:00:00Z')).toEqual(['2026-11-01T05:30:00.000Z', '2026-11-02T06:30:00.000Z', '2026-11-03T06:30:00.000Z']);
      expect(await ids({ pattern: '30 1 * * *', dst: { fold: 'twice' } }, '2026-10-31T12:00:00Z')).toEqual([
        '2026-11-01T05:30:00.000Z',
        '2026-11-01T06:30:00.000Z',
        '2026-11-02T06:30:00.000Z',
        '2026-11-03T06:30:00.000Z',
      ]);
    });
  });

  describe('replicas', () => {
    it('three dispatchers ticking at once enqueue and record each occurrence once', async () => {
      const s = await setup({ missed: 'all', maxCatchUp: 5 });
      const results = await Promise.all([1, 2, 3].map(() => s.dispatcher().tick(T0 + 8 * MIN + 1000)));
      // 8 occurrences: the last is within grace (on time), 3..7 are caught up (maxCatchUp 5), 1..2 are missed
      expect(results.reduce((sum, r) => sum + r.enqueued, 0)).toBe(1);
      expect(results.reduce((sum, r) => sum + r.caughtUp, 0)).toBe(5);
      expect(results.reduce((sum, r) => sum + r.missed, 0)).toBe(2);
      expect(await s.queues.get('q').getJobCountByTypes('delayed', 'wait')).toBe(6);
      expect(await readHistory(t.redis, s.prefix, s.id)).toHaveLength(8);
    });

    it('an occurrence claimed by a replica that died before enqueuing is enqueued once by another after the lease', async () => {
      const s = await setup({}, T0, { leaseMs: 5_000 });
      const k = shardKeys(s.prefix, shardOf(s.id));
      const now = T0 + MIN + 1000;
      // the dead replica's claim: lease until now + 5 s, never committed
      const claimed = (await runScript(t.redis, CLAIM, [k.due, k.claimed, k.inflight, k.defs], [now, now, 10, now + 5_000, 'dead'])) as [number, ...string[]];
      expect(claimed).toEqual([0, s.id, String(T0 + MIN), expect.any(String)]); // none taken over, then (id, nominal, definition)
      expect(await s.dispatcher().tick(now + 1000)).toMatchObject({ claimed: 0 }); // lease still held
      const later = await Promise.all([1, 2].map(() => s.dispatcher().tick(now + 6_000)));
      expect(later.reduce((sum, r) => sum + r.enqueued, 0)).toBe(1);
      expect(await s.queues.get('q').getJobCountByTypes('delayed', 'wait')).toBe(1);
      expect((await readHistory(t.redis, s.prefix, s.id))[0]?.enqueuedAt).toBeDefined();
      expect(await t.redis.zcard(k.claimed)).toBe(0);
    });

    it('an occurrence whose claimer died after enqueuing it keeps the outcome of its run when another re-plans it late', async () => {
      const s = await setup({ missed: 'once' }, T0, { leaseMs: 5_000 });
      const k = shardKeys(s.prefix, shardOf(s.id));
      const now = T0 + MIN + 1000;
      // The dead replica claimed minute 1 and added its run, which ran; the replica died before its commit.
      expect(((await runScript(t.redis, CLAIM, [k.due, k.claimed, k.inflight, k.defs], [now, now, 10, now + 5_000, 'dead'])) as string[])[1]).toBe(s.id);
      const ranAt = new Date(T0 + MIN);
      const id = occurrenceKey(s.id, ranAt);
      const defaults = { id, schedule: s.id, nominal: ranAt.toISOString(), trigger: 'schedule' as const };
      await mergeOccurrence(t.redis, s.prefix, s.id, id, ranAt.getTime(), { startedAt: new Date(now).toISOString() }, defaults);
      // Another replica takes over only minutes later: minute 1 is late with later ones due (missed: 'once').
      expect(await s.dispatcher().tick(T0 + 5 * MIN + 30_000)).toMatchObject({ caughtUp: 1 });
      const outcome = async (m: number) => (await readHistory(t.redis, s.prefix, s.id)).find((r) => r.nominal === new Date(T0 + m * MIN).toISOString());
      expect((await outcome(1))?.outcome).toBeUndefined(); // still running, as far as the history knows
      expect((await outcome(2))?.outcome).toBe('missed');
      // The run's own outcome lands as usual, before or after the re-plan.
      await mergeOccurrence(t.redis, s.prefix, s.id, id, ranAt.getTime(), { outcome: 'completed' }, defaults);
      expect((await outcome(1))?.outcome).toBe('completed');
    });
  });
});
