/**
 * The stall bookkeeping the worker's reaper does for a dead process's jobs (stalls.ts), held to what BullMQ's
 * own stalled check (moveStalledJobsToWait) does to the same job: the same hash fields, the same place in
 * the queue, the same events, and the same failure once the job has stalled more than allowed.
 */
import { startRedisServer, waitFor, type RedisServerHandle } from '@tickwork/testkit';
import { Job, Queue, Worker } from 'bullmq';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { activeLockedBy, countStall, lockKeyOf, resetStallCount, STALLED_REASON } from './stalls.js';

let server: RedisServerHandle;
let redis: Redis;
beforeAll(async () => {
  server = await startRedisServer();
  redis = new Redis(server.url, { maxRetriesPerRequest: null });
});
afterAll(async () => {
  redis.disconnect();
  await server.stop();
});

const MAX_STALLED = 1;

/** A queue holding one job taken by a Worker that then "dies" (closed without finishing it): its token still holds the lock. */
async function takenJob(name: string): Promise<{ queue: Queue; worker: Worker; job: Job; token: string }> {
  const queue = new Queue(name, { connection: new Redis(server.url, { maxRetriesPerRequest: null }) });
  await queue.add('j', { n: 1 }, { jobId: 'j1' });
  const worker = new Worker(name, null, { connection: new Redis(server.url, { maxRetriesPerRequest: null }), autorun: false, maxStalledCount: MAX_STALLED, stalledInterval: 60_000 });
  const token = `${worker.id}:1`;
  const job = (await worker.getNextJob(token)) as Job;
  expect(job?.id).toBe('j1');
  return { queue, worker, job, token };
}

/** What a job's stall leaves: its stall fields, where it is, and the events after the first `active`. */
async function stateOf(queue: Queue): Promise<{ stc: string | null; defa: string | null; state: string; wait: string[]; events: string[] }> {
  const key = queue.toKey('j1');
  const [stc, defa] = await redis.hmget(key, 'stc', 'defa');
  const raw = await redis.xrange(queue.keys.events as string, '-', '+');
  const names = raw.map(([, f]) => f[f.indexOf('event') + 1] as string);
  return { stc: stc ?? null, defa: defa ?? null, state: await queue.getJobState('j1'), wait: await redis.lrange(queue.keys.wait as string, 0, -1), events: names.slice(names.indexOf('active') + 1) };
}

/** BullMQ's own way: the lock gone (its worker dead past the lock), then two passes of its stalled check. */
async function bullmqStall(q: { queue: Queue; worker: Worker }): Promise<void> {
  await redis.del(lockKeyOf(q.queue.toKey('j1')));
  const checker = new Worker(q.queue.name, null, { connection: new Redis(server.url, { maxRetriesPerRequest: null }), autorun: false, maxStalledCount: MAX_STALLED, stalledInterval: 100 });
  // Its check marks the active job as possibly stalled, then moves it on the next pass.
  const moved = new Promise<void>((resolve) => checker.on('stalled', () => resolve()));
  void checker.startStalledCheckTimer();
  await moved;
  await checker.close(true);
}

/** tickwork's reaper's way: the stall counted while the dead worker's token holds the lock, then BullMQ's public moveToWait. */
async function tickworkStall(q: { queue: Queue; job: Job; token: string }): Promise<void> {
  const key = q.queue.toKey('j1');
  expect(await countStall(redis, key, q.token, MAX_STALLED, STALLED_REASON, q.queue.keys.events as string, 'j1')).toBeGreaterThan(0);
  await q.job.moveToWait(q.token);
}

describe('counting a stall', () => {
  it("leaves the job as BullMQ's stalled check leaves it: stall count, place in wait, events", async () => {
    const a = await takenJob('stall-bullmq');
    const b = await takenJob('stall-tickwork');
    await bullmqStall(a);
    await tickworkStall(b);
    const [ours, theirs] = [await stateOf(b.queue), await stateOf(a.queue)];
    // The same events, `stalled` before `waiting` rather than after (counted, then moved): listeners see both.
    expect({ ...ours, events: [...ours.events].sort() }).toEqual({ ...theirs, events: [...theirs.events].sort() });
    expect(ours).toMatchObject({ stc: '1', defa: null, state: 'waiting', wait: ['j1'] });
    for (const q of [a, b]) {
      await q.worker.close(true);
      await q.queue.close();
    }
  });

  it('past the limit, fails the job when next taken, with BullMQ\'s reason, as its check does', async () => {
    const outcomes: Record<string, { state: string; reason: string | undefined; stc: string | null }> = {};
    for (const [name, stall] of [['over-bullmq', bullmqStall], ['over-tickwork', tickworkStall]] as const) {
      const q = await takenJob(name);
      for (let i = 0; i <= MAX_STALLED; i++) {
        if (i > 0) {
          const again = await q.worker.getNextJob(q.token);
          expect(again?.id).toBe('j1');
          q.job = again as Job;
        }
        await stall(q);
      }
      // Taken once more by a running Worker, it fails without running (its deferred failure).
      await q.worker.close(true);
      let ran = false;
      const next = new Worker(name, async () => void (ran = true), { connection: new Redis(server.url, { maxRetriesPerRequest: null }), maxStalledCount: MAX_STALLED });
      await waitFor(async () => (await q.queue.getJobState('j1')) === 'failed', { timeoutMs: 10_000, what: `${name} failed` });
      await next.close();
      expect(ran).toBe(false);
      const job = await q.queue.getJob('j1');
      outcomes[name] = { state: await q.queue.getJobState('j1'), reason: job?.failedReason, stc: await redis.hget(q.queue.toKey('j1'), 'stc') };
      await q.queue.close();
    }
    expect(outcomes['over-tickwork']).toEqual(outcomes['over-bullmq']);
    expect(outcomes['over-tickwork']).toMatchObject({ state: 'failed', reason: STALLED_REASON, stc: String(MAX_STALLED + 1) });
  });

  it('counts nothing once the dead worker\'s token no longer holds the lock', async () => {
    const q = await takenJob('stall-gone');
    expect(await countStall(redis, q.queue.toKey('j1'), 'someone-else:1', MAX_STALLED, STALLED_REASON, q.queue.keys.events as string, 'j1')).toBe(0);
    expect(await redis.hget(q.queue.toKey('j1'), 'stc')).toBeNull();
    await q.worker.close(true);
    await q.queue.close();
  });
});

describe('the active jobs a worker holds', () => {
  it('are found by the token prefix of their BullMQ lock, as the reaper and the lost-delivery check read them', async () => {
    const q = await takenJob('held-by');
    expect(await activeLockedBy(redis, q.queue, q.worker.id)).toEqual([{ id: 'j1', token: q.token }]);
    expect(await activeLockedBy(redis, q.queue, 'another-worker')).toEqual([]);
    expect(await activeLockedBy(redis, q.queue, q.worker.id, () => false)).toEqual([]);
    await q.worker.close(true);
    await q.queue.close();
  });
});

describe('resetting the stall count', () => {
  it("sets BullMQ's count back to 0 only while the token holds the job", async () => {
    const q = await takenJob('reset');
    const key = q.queue.toKey('j1');
    await redis.hset(key, 'stc', 2);
    expect(await resetStallCount(redis, key, 'another:1')).toBe(false);
    expect(await redis.hget(key, 'stc')).toBe('2');
    expect(await resetStallCount(redis, key, q.token)).toBe(true);
    expect(await redis.hget(key, 'stc')).toBe('0');
    await q.worker.close(true);
    await q.queue.close();
  });
});
