import { createLogger, scheduledRunOf, type MissedPolicy, type QueueSet, type ScheduleSpec } from '@tickwork/core';
import { createSchedules, historyKeysOf, readHistory, runRecorder, shardKeys, shardOf } from '@tickwork/schedules';
import { describe, expect, it } from 'vitest';
import { useRedisPerFile } from './testing/redis-per-file.js';
import { scheduleOf } from './testing/store-fixture.js';

const t = useRedisPerFile();
const queueSets = t.queueSets;
const log = createLogger('test', 'silent');
const MIN = 60_000;
const T0 = Date.parse('2026-05-01T00:00:00Z');


async function runtime(spec: Partial<ScheduleSpec> = {}, lookaheadMs = 2 * MIN) {
  const s = await scheduleOf(t.redis, 'runtime', { pattern: '* * * * *', tz: 'UTC', ...spec } as ScheduleSpec, T0, { lookaheadMs });
  queueSets.push(s.queues);
  return s;
}
const pending = async (s: { queues: QueueSet }) =>
  (await s.queues.get('q').getJobs(['delayed', 'wait'], 0, -1)).map((j) => `${(((scheduledRunOf(j.opts)?.nominal ?? 0) - T0) / MIN).toString()}${scheduledRunOf(j.opts)?.catchUp ? ':catch-up' : ''}`).sort();
const gate = (s: { prefix: string; id: string }, nominal: number, v: number) =>
  runRecorder(t.redis, s.prefix, { name: 'minutely' } as never, { id: 'x', name: 'minutely', data: {}, scheduled: { schedule: s.id, nominal, catchUp: false, v } }, log)?.started(1);

describe('a changed definition with an occurrence already enqueued ahead', () => {
  it('removes the not-yet-started jobs of the old definition, fires the new rule from now, and the worker skips an old run that starts anyway', async () => {
    const s = await runtime();
    await s.dispatcher().tick(T0 + 1000); // enqueues 1 and 2 (look-ahead 2 min)
    expect(await pending(s)).toEqual(['1', '2']);
    const changed = await s.storeAt(T0 + 2000).upsert(s.id, { job: 'minutely', pattern: '*/5 * * * *', tz: 'UTC', history: 50 });
    expect(changed).toMatchObject({ changed: true, next: new Date(T0 + 5 * MIN) });
    expect(await pending(s)).toEqual([]);
    expect(await gate(s, T0 + MIN, 1)).toBe('changed');
    expect((await readHistory(t.redis, s.prefix, s.id)).find((r) => r.nominal === new Date(T0 + MIN).toISOString())?.outcome).toBe('skipped-changed');
    expect(await gate(s, T0 + 5 * MIN, 2)).toBe('ok');
  });

  it('the same definition again leaves the enqueued occurrences and the due entry alone', async () => {
    const s = await runtime();
    await s.dispatcher().tick(T0 + 1000);
    const due = await t.redis.zscore(shardKeys(s.prefix, shardOf(s.id)).due, s.id);
    expect(await s.storeAt(T0 + 2000).upsert(s.id, { job: 'minutely', pattern: '* * * * *', tz: 'UTC', history: 50 })).toMatchObject({ changed: false });
    expect(await pending(s)).toEqual(['1', '2']);
    expect(await t.redis.zscore(shardKeys(s.prefix, shardOf(s.id)).due, s.id)).toBe(due);
  });
});

describe('remove with an occurrence enqueued', () => {
  it('removes its pending jobs, skips a run that still starts (recorded skipped-removed) and lets the history expire', async () => {
    const s = await runtime();
    await s.dispatcher().tick(T0 + 1000);
    expect(await s.storeAt(T0 + 2000).remove(s.id)).toBe(true);
    expect(await pending(s)).toEqual([]);
    expect(await gate(s, T0 + MIN, 1)).toBe('removed');
    expect((await readHistory(t.redis, s.prefix, s.id)).find((r) => r.nominal === new Date(T0 + MIN).toISOString())?.outcome).toBe('skipped-removed');
    expect(await t.redis.pttl(historyKeysOf(s.prefix, s.id).history)).toBeGreaterThan(29 * 24 * 3600_000);
    expect(await s.dispatcher().tick(T0 + 10 * MIN)).toMatchObject({ claimed: 0 });
  });
});

describe('pause and resume', () => {
  /** Paused at T0 + 30 s, dispatcher ticks through 5 occurrences, resumed at T0 + 5 min 45 s. */
  async function pausedFor5(missed: MissedPolicy, extra: Partial<ScheduleSpec> = {}) {
    const s = await runtime({ missed, ...extra }, 0);
    expect(await s.storeAt(T0 + 30_000).pause(s.id, 'maintenance')).toBe(true);
    for (let m = 1; m <= 5; m++) await s.dispatcher().tick(T0 + m * MIN + 100);
    const history = await readHistory(t.redis, s.prefix, s.id, 50);
    expect(history.map((h) => h.outcome)).toEqual(Array(5).fill('skipped-paused'));
    expect(await pending(s)).toEqual([]);
    expect(await gate(s, T0 + 6 * MIN, 1)).toBe('paused'); // an occurrence enqueued before the pause that starts during it
    await t.redis.del(historyKeysOf(s.prefix, s.id).records, historyKeysOf(s.prefix, s.id).history);
    for (let m = 1; m <= 5; m++) await s.dispatcher().tick(T0 + m * MIN + 100); // nothing more to do
    expect(await s.storeAt(T0 + 5 * MIN + 45_000).resume(s.id)).toBe(true);
    return s;
  }

  it("missed 'skip': resume replays nothing and the next occurrence is the next one after now", async () => {
    const s = await pausedFor5('skip');
    expect(await pending(s)).toEqual([]);
    expect((await s.storeAt(T0 + 5 * MIN + 45_000).get(s.id))?.next).toBe(new Date(T0 + 6 * MIN).toISOString());
  });

  it("missed 'once': resume runs the latest paused occurrence as a catch-up", async () => {
    const s = await pausedFor5('once');
    expect(await pending(s)).toEqual(['5:catch-up']);
    expect((await readHistory(t.redis, s.prefix, s.id))[0]).toMatchObject({ trigger: 'catch-up', nominal: new Date(T0 + 5 * MIN).toISOString() });
    expect((await s.storeAt(T0 + 5 * MIN + 45_000).get(s.id))?.next).toBe(new Date(T0 + 6 * MIN).toISOString());
  });

  it("missed 'all': resume runs up to maxCatchUp inside the catch-up window", async () => {
    expect(await pending(await pausedFor5('all', { maxCatchUp: 3 }))).toEqual(['3:catch-up', '4:catch-up', '5:catch-up']);
    expect(await pending(await pausedFor5('all', { maxCatchUp: 10, catchUpWindow: { minutes: 2 } }))).toEqual(['4:catch-up', '5:catch-up']);
  });
});

describe('runNow', () => {
  it('does not shift the next occurrence or its due entry', async () => {
    const s = await runtime({}, 0);
    const k = shardKeys(s.prefix, shardOf(s.id));
    const due = await t.redis.zscore(k.due, s.id);
    await s.storeAt(T0 + 10_000).runNow(s.id);
    expect(await t.redis.zscore(k.due, s.id)).toBe(due);
    expect(await s.dispatcher().tick(T0 + MIN + 100)).toMatchObject({ enqueued: 1 });
  });
});

describe('writes racing with firing', () => {
  it('upsert, pause, resume and remove while three dispatchers fire: every due entry consistent, every stale run gated', async () => {
    const s = await scheduleOf(t.redis, 'runtime', { pattern: '* * * * * *', tz: 'UTC' } as ScheduleSpec, Date.now(), { lookaheadMs: 1500, leaseMs: 2000 });
    queueSets.push(s.queues);
    const live = createSchedulesNow(s); // the real clock: dispatchers fire in real time here
    const ids = Array.from({ length: 40 }, (_, i) => `race:${i}`);
    for (const id of ids) await live.upsert(id, { job: 'minutely', pattern: '* * * * * *', tz: 'UTC' });
    const dispatchers = [s.dispatcher(), s.dispatcher(), s.dispatcher()];
    let firing = true;
    const loops = dispatchers.map(async (d) => {
      while (firing) await d.tick(Date.now());
    });
    for (let round = 0; round < 4; round++) {
      await Promise.all(
        ids.map(async (id, i) => {
          const op = (i + round) % 4;
          if (op === 0) await live.upsert(id, { job: 'minutely', pattern: round % 2 ? '*/2 * * * * *' : '* * * * * *', tz: 'UTC' });
          else if (op === 1) await live.pause(id, 'race').catch(() => false);
          else if (op === 2) await live.resume(id).catch(() => false);
          else if (i % 10 === 3 && round === 3) await live.remove(id);
        }),
      );
    }
    firing = false;
    await Promise.all(loops);
    await s.dispatcher().tick(Date.now() + 5000); // takes over any lease left and commits
    const jobs = await s.queues.get('q').getJobs(['delayed', 'wait'], 0, -1);
    for (const id of ids) {
      const k = shardKeys(s.prefix, shardOf(id));
      const view = await live.get(id);
      expect(await t.redis.hexists(k.inflight, id)).toBe(0);
      if (!view) {
        expect(await t.redis.zscore(k.due, id)).toBeNull();
        continue;
      }
      const due = await t.redis.zscore(k.due, id);
      expect(due).not.toBeNull();
      for (const job of jobs.filter((j) => scheduledRunOf(j.opts)?.schedule === id)) {
        const run = scheduledRunOf(job.opts);
        // A run of an older version would be skipped at its start; a current one is before the due entry.
        if (run?.v === view.version) expect(run.nominal).toBeLessThan(Number(due));
      }
    }
    for (const job of jobs) {
      const run = scheduledRunOf(job.opts);
      if (run && !(await live.get(run.schedule))) expect(await gate({ prefix: s.prefix, id: run.schedule }, run.nominal, run.v ?? 0)).toBe('removed');
    }
  });
});

function createSchedulesNow(s: { queues: QueueSet; catalog: import('@tickwork/core').Catalog }) {
  return createSchedules({ redis: t.redis, queues: s.queues, catalog: s.catalog, log });
}
