import { createLogger, defineJob, occurrenceKey } from '@tickwork/core';
import { IdempotencyLedger, OverlapGuard } from '@tickwork/exactly-once';
import { HistoryWriteError, mergeOccurrence, readHistory, runRecorder, START_RECORD_AFTER_MS, type RunRecorder } from '@tickwork/schedules';
import { startRedisServer, type RedisServerHandle } from '@tickwork/testkit';
import type { Redis } from 'ioredis';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { z } from 'zod';

/**
 * On a single Redis a scheduled run enters its overlap slot in its start record's call and frees it in its
 * end record's (overlapPolicy, execute): the outcomes must be the guard's own, and the history the same.
 */
let server: RedisServerHandle;
let redis: Redis;
const log = createLogger('test', 'silent');
const job = defineJob({ name: 'se.job', queue: 'q', schema: z.object({}), schedule: { every: { minutes: 1 }, tz: 'UTC' }, handler: async () => 1 });

beforeAll(async () => {
  server = await startRedisServer();
  redis = server.client();
});
afterAll(async () => server.stop());

const occurrence = (id: string, nominal: number, v?: number) =>
  runRecorder(redis, 'se', job, { id, name: job.name, data: {}, scheduled: { schedule: job.name, nominal, catchUp: false, ...(v !== undefined && { v }) } }, log);

it('enters the slot with the start record, skips or buffers beside a running occurrence, and frees the slot with the end record', async () => {
  const guard = new OverlapGuard(redis, { prefix: 'se', leaseMs: 30_000 });
  const slot = guard.slotKey(job.name);
  const key1 = occurrenceKey(job.name, new Date(60_000));
  const first = occurrence('j1', 60_000);
  expect(await first?.startedEntering(1, guard.enterArgs(job.name, key1, 'skip', new Date(60_000)))).toEqual({ verdict: 'ok' });
  expect(await redis.hget(slot, 'running')).toBe(key1);
  // Its verdict is kept: the run's own start (scheduleGate) makes no second call and no second record.
  const calls = async () => Number(/cmdstat_evalsha:calls=(\d+)/.exec(await redis.info('commandstats'))?.[1] ?? 0);
  const before = await calls();
  expect(await first?.started(1)).toBe('ok');
  expect(await calls()).toBe(before);

  // The next occurrence while the first runs: skipped under 'skip' (the guard's skip list has it), waits under 'buffer-one'.
  const key2 = occurrenceKey(job.name, new Date(120_000));
  const second = occurrence('j2', 120_000);
  const skipped = await second?.startedEntering(1, guard.enterArgs(job.name, key2, 'skip', new Date(120_000)));
  expect(skipped).toEqual({ entered: ['skip', key1] });
  expect(guard.outcomeOf((skipped as { entered: string[] }).entered)).toEqual({ kind: 'skip', runningKey: key1 });
  expect((await guard.skips(job.name))[0]).toMatchObject({ idempotencyKey: key2, runningKey: key1, policy: 'skip' });
  const buffered = await second?.startedEntering(1, guard.enterArgs(job.name, key2, 'buffer-one', new Date(120_000)));
  expect(guard.outcomeOf((buffered as { entered: string[] }).entered)).toMatchObject({ kind: 'wait' });
  // Neither wrote a start record: a skipped or waiting occurrence is not running.
  expect((await readHistory(redis, 'se', job.name)).find((r) => r.id === key2)).toBeUndefined();

  // A run of a schedule gone since it was planned is refused by the gate before it enters: the slot is untouched.
  const gone = occurrence('j3', 180_000, 7);
  expect(await gone?.startedEntering(1, guard.enterArgs(job.name, occurrenceKey(job.name, new Date(180_000)), 'skip', new Date(180_000)))).toEqual({ verdict: 'removed' });
  expect(await redis.hget(slot, 'running')).toBe(key1);

  // The end record frees the slot only for its holder.
  expect(await second?.succeeded({ slot, holder: key2 })).toBe(false);
  expect(await redis.hget(slot, 'running')).toBe(key1);
  expect(await first?.succeeded({ slot, holder: key1 })).toBe(true);
  expect(await redis.hget(slot, 'running')).toBeNull();
  const history = new Map((await readHistory(redis, 'se', job.name)).map((r) => [r.id, r]));
  expect(history.get(key1)).toMatchObject({ outcome: 'completed', attempts: 1, jobId: 'j1' });
  expect(history.get(key1)?.startedAt).toBeDefined();
  expect(history.get(occurrenceKey(job.name, new Date(180_000)))).toMatchObject({ outcome: 'skipped-removed' });
  // The buffered occurrence now enters, and a final failure frees the slot too.
  expect(await second?.startedEntering(1, guard.enterArgs(job.name, key2, 'buffer-one', new Date(120_000)))).toEqual({ verdict: 'ok' });
  expect(await second?.failed(new Error('boom'), true, { slot, holder: key2 })).toBe(true);
  expect(await redis.hget(slot, 'running')).toBeNull();
});

it("many runs' history writes leave in few script calls, and one that fails in Redis fails its own run alone", async () => {
  const guard = new OverlapGuard(redis, { prefix: 'se2', leaseMs: 30_000 });
  const schedules = Array.from({ length: 20 }, (_, i) => `batch:s${i}`);
  const recorders = schedules.map((s) => ({ s, rec: runRecorder(redis, 'se2', job, { id: `b-${s}`, name: job.name, data: {}, scheduled: { schedule: s, nominal: 60_000, catchUp: false } }, log) }));
  // s7's overlap slot is not a hash: its entry fails in Redis (WRONGTYPE), inside the batch the others share.
  await redis.set(guard.slotKey('batch:s7'), 'not a hash');
  const calls = async () => Number(/cmdstat_evalsha:calls=(\d+)/.exec(await redis.info('commandstats'))?.[1] ?? 0);
  const before = await calls();
  const outcomes = await Promise.allSettled(
    recorders.map(({ s, rec }) => (rec as RunRecorder).startedEntering(1, guard.enterArgs(s, occurrenceKey(s, new Date(60_000)), 'skip', new Date(60_000)))),
  );
  // The first write goes alone (nothing in flight), the other 19 together in the next call.
  expect((await calls()) - before).toBeLessThanOrEqual(2);
  outcomes.forEach((o, i) => {
    if (i === 7) {
      expect(o.status).toBe('rejected');
      expect((o as PromiseRejectedResult).reason).toBeInstanceOf(HistoryWriteError);
      expect(String((o as PromiseRejectedResult).reason.message)).toContain('WRONGTYPE');
    } else expect(o).toEqual({ status: 'fulfilled', value: { verdict: 'ok' } });
  });
  // Each start is written with its run's end record, in one batch too.
  const ends = await Promise.all(recorders.filter((_, i) => i !== 7).map(({ rec }) => (rec as RunRecorder).succeeded()));
  expect(ends).toHaveLength(19);
  for (const s of schedules.filter((_, i) => i !== 7)) expect((await readHistory(redis, 'se2', s))[0]).toMatchObject({ attempts: 1, outcome: 'completed', startedAt: expect.any(String) });
});

it("a scheduled run's claim carries its start: one call claims a new run, starts it and enters its slot; a claim of a run done or held starts nothing", async () => {
  const guard = new OverlapGuard(redis, { prefix: 'se3', leaseMs: 30_000 });
  const ledger = new IdempotencyLedger(redis, { prefix: 'se3' });
  const slot = guard.slotKey(job.name);
  const rec = (id: string, nominal: number) =>
    runRecorder(redis, 'se3', job, { id, name: job.name, data: {}, scheduled: { schedule: job.name, nominal, catchUp: false } }, log) as RunRecorder;
  const calls = async () => Number(/cmdstat_evalsha:calls=(\d+)/.exec(await redis.info('commandstats'))?.[1] ?? 0);
  const history = async () => new Map((await readHistory(redis, 'se3', job.name)).map((r) => [r.id, r]));

  const key1 = occurrenceKey(job.name, new Date(60_000));
  const call1 = guard.enterArgs(job.name, key1, 'skip', new Date(60_000));
  const first = rec('c1', 60_000);
  let before = await calls();
  const claimed = await ledger.claim(key1, { kind: 'key' }, 'owner-a', undefined, first.claimStarting(1, call1));
  expect(claimed).toMatchObject({ kind: 'claimed', tookOver: false });
  expect(await calls()).toBe(before + 1);
  expect(await redis.hget(slot, 'running')).toBe(key1);
  // Its start is written with its next record (START_RECORD_AFTER_MS): none yet.
  expect((await history()).get(key1)).toBeUndefined();
  // The run's own entry and start (overlapPolicy, scheduleGate) take the kept outcome: no call.
  before = await calls();
  expect(await first.startedEntering(1, call1)).toEqual({ verdict: 'ok' });
  expect(await first.started(1)).toBe('ok');
  expect(await calls()).toBe(before);

  // A second delivery of the held run: busy, and its attempt 2 is not recorded as a start.
  const dup = rec('c1', 60_000);
  expect(await ledger.claim(key1, { kind: 'key' }, 'owner-b', undefined, dup.claimStarting(2, call1))).toMatchObject({ kind: 'busy', holder: 'owner-a' });
  // Once done, a duplicate gets the recorded result, and starts nothing either.
  if (claimed.kind !== 'claimed') throw new Error('unreachable');
  expect(await claimed.run.complete('paid')).toBe(true);
  await first.succeeded({ slot, holder: key1 });
  expect(await ledger.claim(key1, { kind: 'key' }, 'owner-c', undefined, rec('c1', 60_000).claimStarting(3, call1))).toMatchObject({ kind: 'done', result: 'paid' });
  expect((await history()).get(key1)).toMatchObject({ attempts: 1, outcome: 'completed', jobId: 'c1', startedAt: expect.any(String) });

  // The next occurrence while another holds the slot: claimed (a new run) but skipped, with no start record.
  await redis.hset(slot, 'running', 'other-run', 'runningUntil', String(Date.now() + 60_000));
  const key2 = occurrenceKey(job.name, new Date(120_000));
  const call2 = guard.enterArgs(job.name, key2, 'skip', new Date(120_000));
  const second = rec('c2', 120_000);
  expect(await ledger.claim(key2, { kind: 'key' }, 'owner-d', undefined, second.claimStarting(1, call2))).toMatchObject({ kind: 'claimed' });
  before = await calls();
  expect(await second.startedEntering(1, call2)).toEqual({ entered: ['skip', 'other-run'] });
  expect(await calls()).toBe(before);
  expect((await history()).get(key2)).toBeUndefined();

  // A call that fails (here: the run's overlap slot is not a hash) leaves the claim to the ledger's own, which claims the run.
  const key3 = occurrenceKey('broken', new Date(60_000));
  await redis.set(guard.slotKey('broken'), 'not a hash');
  const broken = runRecorder(redis, 'se3', job, { id: 'c3', name: job.name, data: {}, scheduled: { schedule: 'broken', nominal: 60_000, catchUp: false } }, log) as RunRecorder;
  const brokenCall = guard.enterArgs('broken', key3, 'skip', new Date(60_000));
  expect(await ledger.claim(key3, { kind: 'key' }, 'owner-e', undefined, broken.claimStarting(1, brokenCall))).toMatchObject({ kind: 'claimed' });
  expect(await ledger.inspect(key3)).toMatchObject({ state: 'running', owner: 'owner-e' });
});

it('a run still going after START_RECORD_AFTER_MS has its start written on its own; a run that ends sooner writes one record; a watched run writes its start at once', async () => {
  const rec = (id: string, nominal: number) =>
    runRecorder(redis, 'se4', job, { id, name: job.name, data: {}, scheduled: { schedule: job.name, nominal, catchUp: false } }, log) as RunRecorder;
  const read = async (nominal: number) => (await readHistory(redis, 'se4', job.name)).find((r) => r.id === occurrenceKey(job.name, new Date(nominal)));
  const merges = async () => Number(/cmdstat_hset:calls=(\d+)/.exec(await redis.info('commandstats'))?.[1] ?? 0);

  const fast = rec('f1', 60_000);
  const before = await merges();
  expect(await fast.started(1)).toBe('ok');
  expect(await fast.succeeded()).toBe(false);
  // One HSET: the record with its start and its end together.
  expect((await merges()) - before).toBe(1);
  expect(await read(60_000)).toMatchObject({ attempts: 1, outcome: 'completed', startedAt: expect.any(String), endedAt: expect.any(String) });

  // A planner's verdict written while a run's start is not (a takeover re-planning it late): the run's end overwrites it.
  const late = rec('l1', 90_000);
  expect(await late.started(1)).toBe('ok');
  const id = occurrenceKey(job.name, new Date(90_000));
  await mergeOccurrence(redis, 'se4', job.name, id, 90_000, { endedAt: new Date().toISOString(), outcome: 'missed', error: 'late' }, { id, schedule: job.name });
  await late.succeeded();
  expect(await read(90_000)).toMatchObject({ attempts: 1, outcome: 'completed', startedAt: expect.any(String) });

  const slow = rec('s1', 120_000);
  const startedAt = Date.now();
  expect(await slow.started(2)).toBe('ok');
  expect(await read(120_000)).toBeUndefined();
  // Poll with a deadline: the start shows on its own, the run still going.
  const deadline = Date.now() + 10_000;
  let shown = await read(120_000);
  while (!shown && Date.now() < deadline) {
    await new Promise((r) => setTimeout(r, 50));
    shown = await read(120_000);
  }
  expect(Date.now() - startedAt).toBeGreaterThanOrEqual(START_RECORD_AFTER_MS - 5);
  expect(shown).toMatchObject({ attempts: 2, startedAt: expect.any(String) });
  expect(shown?.outcome).toBeUndefined();
  await slow.failed(new Error('boom'), true);
  expect(await read(120_000)).toMatchObject({ attempts: 2, outcome: 'failed', error: 'boom' });

  // A watched run (sa: its slow-run deadline) writes its start at once: the slow-run watchdog reads it.
  const watched = runRecorder(redis, 'se4', job, { id: 'w1', name: job.name, data: {}, scheduled: { schedule: job.name, nominal: 150_000, catchUp: false, sa: 60_000 } }, log) as RunRecorder;
  expect(await watched.started(1)).toBe('ok');
  expect(await read(150_000)).toMatchObject({ attempts: 1, startedAt: expect.any(String) });
});
