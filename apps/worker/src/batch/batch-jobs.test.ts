/**
 * Batch jobs (defineBatchJob) in an in-process worker pool on a private Redis: every job handled and its
 * effects committed once, in batches no larger than the job's size; an invalid job failing alone; a failed
 * batch retried by its jobs' retry policy and dead-lettered when they run out; a paused queue left alone.
 */
import { cancelRequestsKey, listDlqItems, requestCancel } from '@tickwork/operations';
import { metricsRegistry } from '@tickwork/core';
import { waitFor } from '@tickwork/testkit';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { BT_KEYS, catalog } from '../testing/batch-fixtures.js';
import { startPoolFixture, type PoolFixture } from '../testing/pool-fixture.js';

let f: PoolFixture;

beforeAll(async () => {
  f = await startPoolFixture(catalog, catalog.queues);
}, 30_000);

afterAll(async () => {
  await f?.stop();
});

beforeEach(async () => {
  await f.redis.del(...Object.values(BT_KEYS));
});

const addMany = (jobs: Record<string, unknown>[]) => f.queues.get('bt').addBulk(jobs.map((data) => ({ name: 'bt.sum', data, opts: { attempts: 3, backoff: { type: 'fixed', delay: 50 } } })));
const deadLetters = async () => (await listDlqItems(f.queues, 'bt')).flatMap((i) => (i.entry ? [i.entry] : []));
const count = async () => Number(await f.redis.get(BT_KEYS.count));
const settled = async (): Promise<boolean> => (await f.queues.get('bt').getActiveCount()) === 0 && (await f.queues.get('bt').getWaitingCount()) === 0 && (await f.queues.get('bt').getDelayedCount()) === 0;

describe('batch jobs', () => {
  it('handles every job once, in batches of at most the job size, and completes each', async () => {
    const jobs = await addMany(Array.from({ length: 1050 }, (_, n) => ({ n })));
    await waitFor(async () => (await count()) === 1050 && (await settled()), { timeoutMs: 30_000, what: '1,050 jobs committed' });
    expect(await f.redis.scard(BT_KEYS.done)).toBe(1050);
    expect(await f.redis.llen(BT_KEYS.handled)).toBe(1050);
    const sizes = (await f.redis.lrange(BT_KEYS.sizes, 0, -1)).map(Number);
    expect(Math.max(...sizes)).toBeLessThanOrEqual(100);
    expect(sizes.reduce((a, b) => a + b, 0)).toBe(1050);
    // Completed as BullMQ jobs: state, finishedOn and attemptsMade as a BullMQ worker leaves them.
    const last = await f.queues.get('bt').getJob(String(jobs[1049]?.id));
    expect(await last?.getState()).toBe('completed');
    expect(last?.attemptsMade).toBe(1);
    expect(typeof last?.finishedOn).toBe('number');
    // No batch is left in flight.
    expect(await f.redis.zcard('tw:bt:batches')).toBe(0);
    expect(await f.redis.hlen('tw:bt:batch-ids')).toBe(0);
    // Each job counted in the job metrics; one pair of events per batch in the queue's stream.
    expect(await metricsRegistry.metrics()).toMatch(/tickwork_jobs_completed_total\{queue="bt",job="bt.sum"\} 1050/);
    const events = (await f.redis.xrange('tw:bt:events', '-', '+')).map(([, fields]) => fields[1]);
    expect(events.filter((e) => e === 'batch:completed')).toHaveLength(sizes.length);
    expect(events).not.toContain('completed');
  }, 60_000);

  it('fails the jobs of a batch that outlasts its timeout, its handler aborted', async () => {
    const job = await f.queues.get('bt-slow').add('bt.slow', {}, { attempts: 1 });
    const entry = await waitFor(async () => (await listDlqItems(f.queues, 'bt-slow')).find((i) => i.entry?.originalJobId === String(job.id))?.entry, {
      timeoutMs: 30_000,
      what: 'timed-out batch dead-lettered',
    });
    expect(entry.failureReason).toBe('batch timed out after 200 ms');
  }, 60_000);

  it('fails a job with an invalid payload alone, for good, to the DLQ; the rest of its batch completes', async () => {
    const [bad] = await f.queues.get('bt').addBulk([{ name: 'bt.sum', data: { n: 'not a number' } }]);
    await addMany(Array.from({ length: 20 }, (_, n) => ({ n })));
    await waitFor(async () => (await count()) === 20 && (await settled()), { timeoutMs: 30_000, what: 'good jobs committed' });
    await waitFor(async () => (await deadLetters()).some((e) => e.originalJobId === String(bad?.id)), {
      timeoutMs: 30_000,
      what: 'invalid job dead-lettered',
    });
    const item = (await deadLetters()).find((e) => e.originalJobId === String(bad?.id));
    expect(item?.failureReason).toMatch(/^invalid payload: n/);
    expect(await f.redis.sismember(BT_KEYS.done, String(bad?.id))).toBe(0);
  }, 60_000);

  it('fails a job the handler rejects (ctx.fail) alone: the rest of its batch completes once, it is retried and dead-lettered', async () => {
    const jobs = await addMany(Array.from({ length: 10 }, (_, n) => ({ n, reject: n === 4 })));
    const rejected = String(jobs[4]?.id);
    await waitFor(async () => (await deadLetters()).some((e) => e.originalJobId === rejected), { timeoutMs: 30_000, what: 'rejected job dead-lettered' });
    const entry = (await deadLetters()).find((e) => e.originalJobId === rejected);
    expect(entry?.failureReason).toBe('rejected by the handler');
    expect(entry?.attemptsMade).toBe(3);
    expect(await count()).toBe(9);
    expect(await f.redis.sismember(BT_KEYS.done, rejected)).toBe(0);
    // The nine were handled once (in the first batch); the rejected job three times.
    const handled = await f.redis.lrange(BT_KEYS.handled, 0, -1);
    expect(handled.filter((id) => id === rejected)).toHaveLength(3);
    expect(handled).toHaveLength(12);
    expect((await f.queues.get('bt').getJob(String(jobs[0]?.id)))?.attemptsMade).toBe(1);
    // A batch whose every job the handler failed still ends cleanly: no lease reported lost.
    expect(f.captured.lines.some((l) => l.includes("lease was lost"))).toBe(false);
  }, 60_000);

  it('retries a failed batch by its jobs retry policy, and commits its effects once when it succeeds', async () => {
    const jobs = await addMany(Array.from({ length: 30 }, (_, n) => ({ n, failUntilAttempt: 2 })));
    await waitFor(async () => (await count()) === 30 && (await settled()), { timeoutMs: 30_000, what: 'jobs committed on their second attempt' });
    expect(await f.redis.scard(BT_KEYS.done)).toBe(30);
    const job = await f.queues.get('bt').getJob(String(jobs[0]?.id));
    expect(job?.attemptsMade).toBe(2);
    expect(await f.redis.llen(BT_KEYS.handled)).toBe(60);
  }, 60_000);

  it('dead-letters the jobs of a batch that fails every attempt, with the reason, and commits none of their effects', async () => {
    const jobs = await addMany(Array.from({ length: 5 }, (_, n) => ({ n, failUntilAttempt: 99 })));
    const ids = jobs.map((j) => String(j.id));
    await waitFor(async () => {
      const dead = (await deadLetters()).map((e) => e.originalJobId);
      return ids.every((id) => dead.includes(id));
    }, { timeoutMs: 30_000, what: 'all five dead-lettered' });
    const item = (await deadLetters()).find((e) => e.originalJobId === ids[0]);
    expect(item?.failureReason).toBe('this batch fails its attempt');
    expect(item?.attemptsMade).toBe(3);
    expect(await count()).toBe(0);
  }, 60_000);

  it('fails the attempt of a batch whose write Redis refuses, completing none of its jobs, and dead-letters them in the end', async () => {
    const jobs = await addMany([{ n: 1, badWrite: true }]);
    await waitFor(async () => (await deadLetters()).some((e) => e.originalJobId === String(jobs[0]?.id)), { timeoutMs: 30_000, what: 'dead-lettered' });
    const entry = (await deadLetters()).find((e) => e.originalJobId === String(jobs[0]?.id));
    expect(entry?.failureReason).toMatch(/^a write of the batch failed: WRONGTYPE/);
    expect(entry?.attemptsMade).toBe(3);
    expect(await f.queues.get('bt').getActiveCount()).toBe(0);
    expect(await f.redis.zcard('tw:bt:batches')).toBe(0);
  }, 60_000);

  it('leaves a paused queue alone, and takes its jobs once it is resumed', async () => {
    await f.queues.get('bt').pause();
    await addMany(Array.from({ length: 10 }, (_, n) => ({ n })));
    // A plain job on the other queue runs meanwhile: the pool is working, the batch queue is paused.
    const plain = await f.queues.get('bt-plain').add('bt.plain', {});
    await waitFor(async () => (await plain.getState()) === 'completed', { timeoutMs: 30_000, what: 'plain job done' });
    expect(await f.queues.get('bt').getWaitingCount()).toBe(10);
    expect(await count()).toBe(0);
    await f.queues.get('bt').resume();
    await waitFor(async () => (await count()) === 10 && (await settled()), { timeoutMs: 30_000, what: 'jobs committed after resume' });
  }, 60_000);

  it('ends a job cancelled before its batch started as cancelled, without running it or dead-lettering it', async () => {
    await f.queues.get('bt').pause();
    const jobs = await addMany(Array.from({ length: 5 }, (_, n) => ({ n })));
    const victim = String(jobs[2]?.id);
    await requestCancel({ queues: f.queues, queue: 'bt', jobId: victim, by: 'alice', reason: 'wrong tenant' });
    await f.queues.get('bt').resume();
    await waitFor(async () => (await count()) === 4 && (await settled()), { timeoutMs: 30_000, what: 'the other four committed' });
    const job = await f.queues.get('bt').getJob(victim);
    expect(await job?.getState()).toBe('failed');
    expect(job?.failedReason).toBe('cancelled by alice: wrong tenant');
    expect(await f.redis.sismember(BT_KEYS.done, victim)).toBe(0);
    expect(await f.redis.hlen(cancelRequestsKey('tw'))).toBe(0);
    await f.routing.sweep();
    expect((await deadLetters()).some((e) => e.originalJobId === victim)).toBe(false);
  }, 60_000);

  it('takes unprioritised jobs before prioritised ones, oldest first', async () => {
    await f.queues.get('bt').pause();
    const urgent = await f.queues.get('bt').add('bt.sum', { n: 1 }, { priority: 1 });
    const plain = await addMany([{ n: 2 }, { n: 3 }]);
    await f.queues.get('bt').resume();
    await waitFor(async () => (await count()) === 3 && (await settled()), { timeoutMs: 30_000, what: 'three jobs committed' });
    expect(await f.redis.lrange(BT_KEYS.handled, 0, -1)).toEqual([...plain.map((j) => String(j.id)), String(urgent.id)]);
  }, 60_000);

  it('runs a delayed job when it is due', async () => {
    const job = await f.queues.get('bt').add('bt.sum', { n: 1 }, { delay: 300 });
    expect(await job.getState()).toBe('delayed');
    await waitFor(async () => (await job.getState()) === 'completed', { timeoutMs: 30_000, what: 'delayed job completed' });
    expect(await count()).toBe(1);
  }, 60_000);
});
