/**
 * The scheduled lane: an on-time occurrence is added at its time at the head of the wait list, so the next
 * job a worker takes is the occurrence, not the backlog; a catch-up run queues behind the backlog.
 */
import { scheduledRunOf, type QueueSet } from '@tickwork/core';
import { shardKeys, shardOf } from '@tickwork/schedules';
import { waitFor } from '@tickwork/testkit';
import { describe, expect, it } from 'vitest';
import { useRedisPerFile } from './testing/redis-per-file.js';
import { KINDS, scheduleOf } from './testing/store-fixture.js';

const t = useRedisPerFile();
const queueSets = t.queueSets;


/** The wait list's next job (BullMQ takes from the right end). */
async function nextWaiting(prefix: string): Promise<string | null> {
  return t.redis.lindex(`${prefix}:q:wait`, -1);
}

/** The job a worker takes next, and its occurrence option. */
async function headOfQueue(prefix: string, queues: QueueSet) {
  const next = await nextWaiting(prefix);
  const job = next === null ? undefined : await queues.get('q').getJob(next);
  return { job, run: job && scheduledRunOf(job.opts) };
}

/**
 * How early an add may come by the wall clock: the fire lane adds at once a run due within FIRE_NOW_MS (2 ms,
 * fire-lane.ts), and a timer may fire a millisecond before its time. Nothing of the run happens early: the
 * worker holds an occurrence that reaches it early until its time (its onTime stage).
 */
const ADD_EARLY_MS = 2;

async function backlog(queues: QueueSet, n: number): Promise<void> {
  await queues.get('q').addBulk(Array.from({ length: n }, (_, i) => ({ name: 'minutely', data: {}, opts: { jobId: `backlog-${i}` } })));
}

describe.each(KINDS)('%s schedules', (kind) => {
  it('an on-time occurrence is added at its time, never delayed, at the head of a 2,000-job backlog', async () => {
    const now = Date.now();
    const s = await scheduleOf(t.redis, kind, { every: { seconds: 1 }, tz: 'UTC' }, now - 60_000, { lookaheadMs: 1000, leaseMs: 10_000 });
    queueSets.push(s.queues);
    await s.dispatcher().tick(now - 1); // the catch-up pass of a new schedule records nothing
    await backlog(s.queues, 2000);
    const tickAt = Date.now();
    const result = await s.dispatcher().tick(tickAt);
    expect(result.enqueued).toBeGreaterThanOrEqual(1);
    const { job, run } = await headOfQueue(s.prefix, s.queues);
    expect(run?.schedule).toBe(s.id);
    expect(run?.catchUp).toBe(false);
    // Added at its nominal time (the tick waited for it), not ahead of it through the delayed set.
    expect(job?.opts.delay ?? 0).toBe(0);
    expect(job?.opts.lifo).toBe(true);
    expect(job!.timestamp).toBeGreaterThanOrEqual(run!.nominal - ADD_EARLY_MS);
    expect(await s.queues.get('q').getDelayedCount()).toBe(0);
  });

  it('with a head start, an on-time occurrence is held and added that long before its time, not delayed, at the head of the backlog', async () => {
    const now = Date.now();
    const headStartMs = 300;
    // Every 5 s rather than every second: the set-up below (a catch-up tick, a backlog of 2,000) took over a
    // second five times in a row on a loaded machine, so the next occurrence was never far enough ahead.
    const s = await scheduleOf(t.redis, kind, { every: { seconds: 5 }, tz: 'UTC' }, now - 60_000, { lookaheadMs: 1000, leaseMs: 10_000, headStartMs });
    queueSets.push(s.queues);
    // The catch-up pass of a new schedule (and what it adds), then an empty queue behind a backlog. The next
    // occurrence must still be far enough ahead to be held: on a busy machine the set-up can outlast it, and
    // then a tick adds that one and the set-up is made again for the next.
    let due = 0;
    for (let tickFrom = now - 1, tries = 0; due - Date.now() <= headStartMs + 100; tickFrom = Date.now(), tries++) {
      if (tries === 5) throw new Error('the set-up outlasted the next occurrence 5 times in a row');
      await s.dispatcher().tick(tickFrom);
      await s.queues.get('q').obliterate({ force: true });
      await backlog(s.queues, 2000);
      due = Number(await t.redis.zscore(shardKeys(s.prefix, shardOf(s.id)).due, s.id));
    }
    // Tick while the next occurrence is within the look-ahead but its add time (its head start before it)
    // still ahead, so the dispatcher holds it.
    const tickAt = await waitFor(
      () => {
        const at = Date.now();
        return due - at <= 1000 && due - at > headStartMs + 100 ? at : undefined;
      },
      { intervalMs: 5, timeoutMs: 10_000, what: 'a tick time that holds the next occurrence' },
    );
    const result = await s.dispatcher().tick(tickAt);
    expect(result.enqueued).toBe(1);
    const { job, run } = await headOfQueue(s.prefix, s.queues);
    expect(run?.schedule).toBe(s.id);
    expect(run?.nominal).toBe(due);
    expect(job?.opts.delay ?? 0).toBe(0);
    expect(job?.opts.lifo).toBe(true);
    // Added its head start before its time: neither at its time nor as soon as it was claimed.
    expect(job!.timestamp).toBeGreaterThanOrEqual(due - headStartMs - ADD_EARLY_MS);
    expect(job!.timestamp).toBeLessThan(due);
    expect(await s.queues.get('q').getDelayedCount()).toBe(0);
  });

  it('a catch-up run queues behind the backlog', async () => {
    const now = Date.now();
    const s = await scheduleOf(t.redis, kind, { pattern: '* * * * *', tz: 'UTC', missed: 'once' }, now - 10 * 60_000, { lookaheadMs: 0, graceMs: 1 });
    queueSets.push(s.queues);
    await backlog(s.queues, 100);
    const result = await s.dispatcher().tick(now);
    expect(result.caughtUp).toBe(1);
    expect(await nextWaiting(s.prefix)).toBe('backlog-0');
    const waiting = await t.redis.lrange(`${s.prefix}:q:wait`, 0, 0);
    const caughtUp = waiting[0] === undefined ? undefined : await s.queues.get('q').getJob(waiting[0]);
    expect(caughtUp && scheduledRunOf(caughtUp.opts)?.catchUp).toBe(true);
  });
});
