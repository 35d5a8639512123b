import { readHistory, type OccurrenceRecord } from '@tickwork/schedules';
import type { RedisClient } from '@tickwork/core';
import { startTestRedis, TOPOLOGIES, waitFor, type TestRedis, type Topology } from '@tickwork/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FX_RUNS_KEY } from './testing/fixture-catalog.js';
import { fixtureApps, readRuns, waitReady as ready } from './testing/fixture-apps.js';

const PREFIX = 'pt';

/**
 * Each topology's Redis, started as the file starts: the cluster takes seconds to form (six nodes joined by
 * `redis-cli --cluster create`), which it spends while the standalone tests run. Stopped after its own
 * tests, or after the file's when those did not run (filtered out).
 */
const redises = new Map<Topology, Promise<TestRedis>>();
beforeAll(() => {
  for (const topology of TOPOLOGIES) {
    const starting = startTestRedis(topology);
    starting.catch(() => undefined); // reported by its tests' beforeAll, which awaits it
    redises.set(topology, starting);
  }
});
async function stopRedis(topology: Topology): Promise<void> {
  const starting = redises.get(topology);
  redises.delete(topology);
  await (await starting?.catch(() => undefined))?.stop();
}
afterAll(async () => {
  await Promise.all(TOPOLOGIES.map(stopRedis));
});

// Both tests on one Redis; on a Redis Cluster the three schedulers racing for each occurrence.
describe.each(TOPOLOGIES)('real scheduler processes against %s Redis', { timeout: 90_000 }, (topology) => {
  let target: TestRedis;
  let redis: RedisClient;
  const apps = fixtureApps(() => target.where, PREFIX);

  beforeAll(async () => {
    const starting = redises.get(topology);
    if (!starting) throw new Error(`no ${topology} Redis started for this file`);
    target = await starting;
    redis = target.client();
  });
  afterAll(async () => {
    await apps.killAll();
    await stopRedis(topology);
  });

  const runs = () => readRuns(redis);

  it('three schedulers started at once enqueue each occurrence once', async () => {
    // A generous grace: this test is about replicas, and a loaded CI machine may start a run a few seconds late.
    const relaxed = { SCHEDULE_GRACE_MS: '20000' };
    const schedulers = await Promise.all([1, 2, 3].map(() => apps.start('scheduler', relaxed)));
    const worker = await apps.start('worker', relaxed);
    await Promise.all([...schedulers, worker].map((a, i) => ready(a, `app ${i} ready`)));
    await waitFor(async () => (await runs()).length >= 6, { timeoutMs: 30_000, what: '6 runs of fx.second' });
    await Promise.all(schedulers.map((s) => s.stop('SIGTERM')));
    await worker.stop('SIGTERM');

    const done = await runs();
    const keys = done.map((r) => r.key);
    expect(new Set(keys).size).toBe(keys.length);
    // No occurrence between the first and the last run was lost: every second is there exactly once.
    const seconds = done.map((r) => Date.parse(r.nominal) / 1000).sort((a, b) => a - b);
    const first = seconds[0] ?? 0;
    expect(seconds).toEqual(seconds.map((_, i) => first + i));
    expect(done.every((r) => r.key === `fx.second@${r.nominal}` && !r.catchUp)).toBe(true);
    const history = await readHistory(redis, PREFIX, 'fx.second', 500);
    expect(history.filter((h) => h.outcome === 'completed').map((h) => h.nominal).sort()).toEqual(done.map((r) => r.nominal).sort());
  });

  // Killed between claims (no look-ahead: the schedule's entry is back in the due index nearly always), or
  // holding its claim (a 1 s look-ahead: the next occurrence's claim is held until its time, so most of the
  // time), which the restarted scheduler takes over after the registry's hold: the same outage either way.
  const kills: { when: string; lookahead: Record<string, string> }[] = [
    { when: 'between claims', lookahead: {} },
    { when: 'holding its claim', lookahead: { SCHEDULE_LOOKAHEAD_MS: '1000' } },
  ];
  if (topology === 'standalone') {
    it.each(kills)('after scheduler and worker are killed ($when) for several occurrences, missed: once catches up the latest and records the rest', async ({ lookahead }) => {
      await redis.del(FX_RUNS_KEY);
      let scheduler = await apps.start('scheduler', lookahead);
      let worker = await apps.start('worker', { SCHEDULE_GRACE_MS: '20000' });
      await Promise.all([ready(scheduler, 'scheduler ready'), ready(worker, 'worker ready')]);
      await waitFor(async () => (await runs()).length >= 2, { timeoutMs: 30_000, what: '2 runs before the outage' });
      await Promise.all([scheduler.stop('SIGKILL'), worker.stop('SIGKILL')]);
      const downAt = Date.now();
      // The outage itself (not a wait for work): long enough for several occurrences beyond the 1.5 s grace.
      await new Promise((r) => setTimeout(r, 5000));
      const upAt = Date.now();
      scheduler = await apps.start('scheduler', lookahead);
      // The worker's own late-run judgement is not under test here (catch-up runs are never judged anyway).
      worker = await apps.start('worker', { SCHEDULE_GRACE_MS: '20000' });
      // On a loaded machine the killed scheduler may itself have caught up a late occurrence before the
      // outage; the one that matters is the catch-up of the outage.
      await waitFor(async () => (await runs()).some((r) => r.catchUp && Date.parse(r.nominal) > downAt), {
        timeoutMs: 30_000,
        what: 'a catch-up run for the outage',
      });
      await scheduler.stop('SIGTERM');
      await worker.stop('SIGTERM');
      const said = JSON.stringify(scheduler.logs().filter((l) => Number(l.level) >= 40 || /took over claims/.test(String(l.msg))));

      // The outage is what the restarted scheduler judged in its first claim of the schedule: from the
      // killed one's cursor (or the claim it died holding) to then. Its latest occurrence late by more than
      // the grace is caught up, the ones before it missed, the ones after it (within the grace) run as usual.
      const history = await readHistory(redis, PREFIX, 'fx.second', 500);
      const byNominal = new Map(history.map((h) => [h.nominal, h]));
      const claimedAt = (h: OccurrenceRecord | undefined) => Date.parse(h?.claimedAt ?? '');
      const firstClaim = Math.min(...history.map(claimedAt).filter((t) => t >= upAt));
      const outage = history.filter((h) => claimedAt(h) === firstClaim);
      const caughtUp = outage.filter((h) => h.trigger === 'catch-up');
      expect(caughtUp, said).toHaveLength(1);
      const record = caughtUp[0] as OccurrenceRecord;
      expect(record).toMatchObject<Partial<OccurrenceRecord>>({ id: `fx.second@${record.nominal}`, outcome: 'caught-up' });
      expect(Date.parse(record.nominal)).toBeGreaterThan(downAt);
      expect(Date.parse(record.nominal)).toBeGreaterThan(upAt - 5000);
      // it was past due by more than the grace when the restarted scheduler claimed it
      expect(firstClaim).toBeGreaterThan(Date.parse(record.nominal) + 1500);
      const missed = outage.filter((h) => h.outcome === 'missed');
      expect(missed.filter((m) => Date.parse(m.nominal) > downAt).length).toBeGreaterThanOrEqual(2);
      expect(missed.every((m) => m.nominal < record.nominal)).toBe(true);
      expect(outage.filter((h) => h.nominal > record.nominal).every((h) => h.trigger === 'schedule')).toBe(true);

      // It ran once, as a catch-up. A scheduler that falls more than the grace behind again later (a loaded
      // machine, with a grace this short) catches that lateness up by the same rule, as an outage of its own:
      // any other catch-up is of an occurrence due after the first claim, claimed later than the grace after it.
      const catchUpRuns = (await runs()).filter((r) => r.catchUp && Date.parse(r.nominal) > downAt);
      expect(catchUpRuns.filter((r) => r.nominal === record.nominal), said).toEqual([{ key: record.id, catchUp: true, nominal: record.nominal }]);
      for (const r of catchUpRuns.filter((c) => c.nominal !== record.nominal)) {
        expect(Date.parse(r.nominal), said).toBeGreaterThan(firstClaim);
        expect(claimedAt(byNominal.get(r.nominal)), said).toBeGreaterThan(Date.parse(r.nominal) + 1500);
      }
      // Nothing silently lost: every second of the outage has a record (run, caught up or missed).
      const lastBefore = Math.max(...history.filter((h) => Date.parse(h.nominal) < downAt && h.outcome === 'completed').map((h) => Date.parse(h.nominal)));
      for (let t = lastBefore + 1000; t <= firstClaim; t += 1000) {
        expect(byNominal.get(new Date(t).toISOString()), new Date(t).toISOString()).toBeDefined();
      }
    });
  }
});
