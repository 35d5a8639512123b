/**
 * Adding ahead (dispatch/lift-lane.ts): a schedule's occurrence due within the add-ahead window, when it is
 * the schedule's only one there, is added at once as a delayed job and its claim committed, then lifted at
 * its head start before its time to the head of the wait list, ahead of a backlog, as an occurrence added at
 * its time is placed; never before then. Another replica lifts what a stopped one added; a changed
 * schedule's occurrence added ahead makes way for the new rule's; a schedule more frequent than the window
 * is added at its time, as without adding ahead, and a change clears its mark.
 */
import { scheduledRunOf, type QueueSet } from '@tickwork/core';
import { occurrenceJobId, shardKeys, shardOf } from '@tickwork/schedules';
import { waitFor } from '@tickwork/testkit';
import { describe, expect, it } from 'vitest';
import { useRedisPerFile } from './testing/redis-per-file.js';
import { KINDS, scheduleOf, type ScheduleKind } from './testing/store-fixture.js';

type Job = NonNullable<Awaited<ReturnType<ReturnType<QueueSet['get']>['getJob']>>>;

const t = useRedisPerFile();
const HEAD_START_MS = 100;
const WINDOW_MS = 10_000;

async function backlog(queues: QueueSet, n: number): Promise<void> {
  await queues.get('q').addBulk(Array.from({ length: n }, (_, i) => ({ name: 'minutely', data: {}, opts: { jobId: `backlog-${i}` } })));
}

/** The job a worker takes next (BullMQ takes from the right end of the wait list). */
async function headOfQueue(prefix: string, queues: QueueSet) {
  const next = await t.redis.lindex(`${prefix}:q:wait`, -1);
  const job = next === null ? undefined : await queues.get('q').getJob(next);
  return { job, run: job && scheduledRunOf(job.opts) };
}

const nominalOf = (j: Job) => scheduledRunOf(j.opts)?.nominal ?? 0;

/** Ticks `d` until the queue holds a delayed job (an occurrence added ahead); the delayed jobs. */
function tickUntilAdded(d: { tick(now?: number): Promise<unknown> }, q: ReturnType<QueueSet['get']>, what: string): Promise<Job[]> {
  return waitFor(
    async () => {
      await d.tick(Date.now());
      const delayed = await q.getDelayed();
      return delayed.length > 0 ? delayed : undefined;
    },
    { timeoutMs: 20_000, intervalMs: 250, what },
  );
}

/** A schedule every 10 s (the window) whose dispatcher has ticked until it added an occurrence ahead. */
async function addedAhead(kind: ScheduleKind) {
  const now = Date.now();
  const s = await scheduleOf(t.redis, kind, { every: { seconds: 10 }, tz: 'UTC' }, now - 60_000, { lookaheadMs: 1000, leaseMs: 10_000, headStartMs: HEAD_START_MS, addAheadMs: WINDOW_MS });
  t.queueSets.push(s.queues);
  const first = s.dispatcher();
  const q = s.queues.get('q');
  const [job] = await tickUntilAdded(first, q, 'an occurrence added ahead');
  return { s, first, q, job: job as Job };
}

// Each test but the last waits for an occurrence's time (up to the window; one after another, about a
// minute): on prefixes of their own, they wait side by side (concurrent, so with the test context's expect).
// The one that times its lifts runs alone, last.
describe.concurrent.each(KINDS)('%s schedules', (kind) => {
  it('are added and committed ahead as a delayed job, then lifted at their head start before their time to the head of a 2,000-job backlog', async ({ expect }) => {
    const { s, first, q, job: added } = await addedAhead(kind);
    try {
      const nominal = nominalOf(added);
      const addedAt = added.timestamp;
      // One occurrence added ahead, beyond the look-ahead; the claim is committed (the due entry is past it).
      expect(await q.getDelayedCount()).toBe(1);
      expect(nominal - addedAt).toBeGreaterThan(1000);
      const due = Number(await t.redis.zscore(shardKeys(s.prefix, shardOf(s.id)).due, s.id));
      expect(due).toBe(nominal + WINDOW_MS);
      // The schedule's next run still reads as it.
      expect((await s.storeAt(Date.now()).get(s.id))?.next).toBe(new Date(nominal).toISOString());
      await backlog(s.queues, 2000);

      const jobId = occurrenceJobId(s.id, new Date(nominal));
      const { job, run } = await waitFor(
        async () => {
          const head = await headOfQueue(s.prefix, s.queues);
          return head.job?.id === jobId ? head : undefined;
        },
        { timeoutMs: 25_000, intervalMs: 20, what: 'the occurrence added ahead at the head of the wait list' },
      );
      expect(run?.schedule).toBe(s.id);
      expect(run?.catchUp).toBe(false);
      // Lifted no earlier than its head start before its time: its delay is the time it spent delayed.
      expect(job!.timestamp).toBe(addedAt);
      expect(job!.timestamp + job!.delay).toBeGreaterThanOrEqual(nominal - HEAD_START_MS);
    } finally {
      await first.idle();
    }
  });

  it('a stopped replica\'s occurrence added ahead is lifted by another replica, not before its time', async ({ expect }) => {
    const { s, first, q, job: added } = await addedAhead(kind);
    await first.idle(); // stops its lifting
    const other = s.dispatcher();
    try {
      const nominal = nominalOf(added);
      const job = await waitFor(async () => ((await q.getJobState(added.id as string)) === 'waiting' ? q.getJob(added.id as string) : undefined), {
        timeoutMs: 25_000,
        intervalMs: 20,
        what: 'the occurrence lifted by the other replica',
      });
      expect(job!.timestamp + job!.delay).toBeGreaterThanOrEqual(nominal - HEAD_START_MS);
    } finally {
      await other.idle();
    }
  });
});

// A catalog schedule changes by a deploy, through the same writer (reconcile.test.ts).
it.concurrent('a change to a runtime schedule removes its occurrence added ahead, and the new rule\'s is added', async ({ expect }) => {
  const { s, first, q, job: before } = await addedAhead('runtime');
  try {
    const store = s.storeAt(Date.now());
    await store.upsert(s.id, { job: 'minutely', every: { seconds: 10 }, tz: 'UTC', history: 40 } as Parameters<typeof store.upsert>[1]);
    expect(await q.getJob(before.id as string)).toBeUndefined();
    const [after] = await tickUntilAdded(first, q, "the new rule's occurrence added ahead");
    expect(scheduledRunOf(after!.opts)?.v).toBeGreaterThan(scheduledRunOf(before.opts)?.v as number);
  } finally {
    await first.idle();
  }
});

it.concurrent('a schedule more frequent than the window is added at its time, never ahead', async ({ expect }) => {
  const now = Date.now();
  const s = await scheduleOf(t.redis, 'runtime', { every: { seconds: 3 }, tz: 'UTC' }, now - 60_000, { lookaheadMs: 1000, leaseMs: 10_000, addAheadMs: WINDOW_MS });
  t.queueSets.push(s.queues);
  const d = s.dispatcher();
  try {
    const until = Date.now() + 7000;
    let enqueued = 0;
    while (Date.now() < until) {
      enqueued += (await d.tick(Date.now())).enqueued;
      expect(await s.queues.get('q').getDelayedCount()).toBe(0);
    }
    // It fired on time meanwhile (added at its time), and between its runs waits in `notAhead` at its due score.
    expect(enqueued).toBeGreaterThanOrEqual(2);
    const k = shardKeys(s.prefix, shardOf(s.id));
    await waitFor(
      async () => {
        await d.tick(Date.now());
        const [notAhead, due] = await Promise.all([t.redis.zscore(k.notAhead, s.id), t.redis.zscore(k.due, s.id)]);
        return notAhead !== null && notAhead === due;
      },
      { timeoutMs: 10_000, intervalMs: 100, what: 'the schedule noted as waiting for the look-ahead' },
    );
    // A change names a new due score: the mark, which named the old one, goes with it.
    await s.store.upsert(s.id, { job: 'minutely', every: { days: 1 }, tz: 'UTC' });
    expect(await t.redis.zscore(k.notAhead, s.id)).toBeNull();
  } finally {
    await d.idle();
  }
});

it('each occurrence added ahead is lifted by its own timer, not left to a later sweep', async () => {
  // A timer may fire a millisecond before its time; its lift must still take the jobs due at that time
  // (else they wait for the next sweep: without sweeps, here, they would stay delayed). Not concurrent: the
  // others' adds (a 2,000-job backlog) on the shared connection would delay its lifts past the check's margin.
  const now = Date.now();
  const s = await scheduleOf(t.redis, 'runtime', { every: { seconds: 1 }, tz: 'UTC' }, now - 60_000, { lookaheadMs: 300, leaseMs: 10_000, headStartMs: 50, addAheadMs: 1000, sweep: false });
  t.queueSets.push(s.queues);
  const d = s.dispatcher();
  const q = s.queues.get('q');
  try {
    const until = Date.now() + 10_000;
    while (Date.now() < until) await d.tick(Date.now());
    const done = Date.now() - 200;
    const jobs = (await q.getJobs(['delayed', 'wait'], 0, -1)).filter((j) => (j.opts.delay ?? 0) > 0 && (scheduledRunOf(j.opts)?.nominal ?? 0) < done);
    expect(jobs.length).toBeGreaterThanOrEqual(5); // added ahead
    const states = await Promise.all(jobs.map(async (j) => `${scheduledRunOf(j.opts)?.nominal}: ${await q.getJobState(j.id as string)}`));
    expect(states.filter((st) => !st.endsWith('waiting'))).toEqual([]);
  } finally {
    await d.idle();
  }
});
