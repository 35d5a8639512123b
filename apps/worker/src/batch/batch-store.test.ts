/**
 * The batch stores (@tickwork/bullmq-engine batch/) driven directly on a private Redis. The fast store: it
 * holds BullMQ's stalled check off its queue while a batch runs; its reclaim of an expired batch leaves a job
 * another batch in flight took since; it finds BullMQ Workers it does not own on its queue (not a public
 * store's). The public store: a batch whose worker died between the commit and the acknowledgements is not
 * run again (its jobs complete when delivered again); failures go through BullMQ's own retries.
 */
import { randomUUID } from 'node:crypto';
import { type BatchStore, type FetchedBatchJob } from '@tickwork/bullmq-engine';
import { createFastBatchStore, createPublicBatchStore } from '@tickwork/bullmq-engine/testing';
import { createRedis, EVENTS_MAX_LEN, keyspaceOn, RedisTx, type RedisClient } from '@tickwork/core';
import { startRedisServer, waitFor, type RedisServerHandle } from '@tickwork/testkit';
import { Queue, Worker } from 'bullmq';
import type { Redis } from 'ioredis';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { batchJob } from '../testing/batch-fixtures.js';

const PREFIX = 'bs';
let server: RedisServerHandle;
let redis: Redis;
let queueNo = 0;
const closing: (() => Promise<unknown>)[] = [];

beforeAll(async () => {
  server = await startRedisServer();
  redis = server.client();
});
afterEach(async () => {
  await Promise.allSettled(closing.splice(0).map((c) => c()));
});
afterAll(async () => {
  redis.disconnect();
  await server.stop();
});

/** A fresh queue holding `n` bt.sum jobs with `attempts`, and a Queue on it. */
async function filled(n: number, attempts = 3): Promise<{ name: string; queue: Queue; ids: string[] }> {
  const name = `bs-${queueNo++}`;
  const queue = new Queue(name, { connection: createRedis(server.url, 'command'), prefix: PREFIX });
  closing.push(() => queue.close());
  const jobs = await queue.addBulk(Array.from({ length: n }, (_, i) => ({ name: 'bt.sum', data: { n: i }, opts: { attempts } })));
  return { name, queue, ids: jobs.map((j) => String(j.id)) };
}

function store(kind: 'fast' | 'public', queue: string, leaseMs: number): { store: BatchStore; blocking: RedisClient } {
  const command = createRedis(server.url, 'command');
  const blocking = createRedis(server.url, 'blocking');
  const o = { redis: command, blocking, keyspace: keyspaceOn(command, PREFIX, queue), queue, def: { ...batchJob, queue }, maxEvents: EVENTS_MAX_LEN, leaseMs, maxStalledCount: 2 };
  const s = kind === 'fast' ? createFastBatchStore(o) : createPublicBatchStore({ ...o, stalledIntervalMs: 200 });
  closing.push(() => s.close());
  return { store: s, blocking };
}

async function fetchJobs(s: BatchStore, token: string, max: number): Promise<FetchedBatchJob[]> {
  const got = await s.fetch(token, max);
  if (got.kind !== 'jobs') throw new Error(`expected jobs, the store found ${got.kind}`);
  return got.jobs;
}

describe('the fast batch store', () => {
  it("holds BullMQ's stalled check off its queue while a batch runs, for four leases", async () => {
    const q = await filled(3);
    const { store: s } = store('fast', q.name, 1000);
    await fetchJobs(s, 't1', 3);
    const ttl = await redis.pttl(`${PREFIX}:${q.name}:stalled-check`);
    expect(ttl).toBeGreaterThan(3000);
    expect(ttl).toBeLessThanOrEqual(4000);
  });

  it('leaves, when it reclaims an expired batch, a job another batch in flight took since', async () => {
    const q = await filled(3);
    const { store: s } = store('fast', q.name, 60_000);
    const first = await fetchJobs(s, 't1', 3);
    const retried = first[0]?.[0] as string;
    // The handler failed one job alone (ctx.fail): retried at once, taken by the next batch.
    expect(await s.fail('t1', [{ id: retried, attemptsMade: 0, reason: 'rejected', final: false }], false)).toEqual([]);
    expect((await fetchJobs(s, 't2', 3)).map((j) => j[0])).toEqual([retried]);
    // The first batch's worker dies: its lease expires (given back here) and is reclaimed.
    await s.giveBack('t1');
    expect(await s.reclaimExpired()).toEqual({ back: 2, failed: [], orphans: 0 });
    expect(await redis.lrange(`${PREFIX}:${q.name}:active`, 0, -1)).toEqual([retried]);
    expect(await s.complete('t2', [{ jobId: retried, attempt: 2 }], new RedisTx())).toBe('done');
    expect(await q.queue.getJobCounts('active', 'wait', 'completed')).toEqual({ active: 0, wait: 2, completed: 1 });
  });

  it("finds a BullMQ Worker it does not own on its queue, and not a public store's", async () => {
    const q = await filled(0);
    const { store: fast } = store('fast', q.name, 1000);
    store('public', q.name, 1000);
    const stock = new Worker(q.name, null, { connection: createRedis(server.url, 'blocking'), prefix: PREFIX, autorun: false });
    closing.push(() => stock.close());
    await stock.waitUntilReady();
    const found = await waitFor(async () => {
      const f = await fast.foreignConsumers();
      return f.length > 0 ? f : undefined;
    }, { what: 'the stock Worker found' });
    expect(found).toHaveLength(1);
    expect(found[0]?.name).toBe(`${PREFIX}:${Buffer.from(q.name).toString('base64')}`);
  });
});

describe('the public batch store', () => {
  it('does not run again a batch whose worker died between its commit and its acknowledgements', async () => {
    const q = await filled(10);
    const a = store('public', q.name, 500);
    const jobs = await fetchJobs(a.store, 'tA', 10);
    expect(jobs).toHaveLength(10);
    // Worker A's BullMQ connection is gone: its acknowledgements never reach Redis, as if it died after its commit.
    a.blocking.disconnect();
    const tx = new RedisTx().incrby('bs:effects', jobs.length);
    expect(await a.store.complete('tA', jobs.map(([jobId, , , made]) => ({ jobId, attempt: made + 1 })), tx)).toBe('done');
    expect(await redis.hlen(`${PREFIX}:${q.name}:batch-done`)).toBe(10);
    expect(await q.queue.getActiveCount()).toBe(10);
    // B gets the jobs back from BullMQ's stalled check (their locks expired) and completes them without running any.
    const b = store('public', q.name, 500);
    await waitFor(
      async () => {
        const got = await b.store.fetch(randomUUID(), 10);
        if (got.kind === 'jobs') throw new Error(`jobs ${got.jobs.map((j) => j[0]).join(',')} were handed to a handler again`);
        return (await q.queue.getCompletedCount()) === 10;
      },
      { timeoutMs: 15_000, what: 'the jobs completed by B without running' },
    );
    expect(Number(await redis.get('bs:effects'))).toBe(10);
    expect(await redis.hlen(`${PREFIX}:${q.name}:batch-done`)).toBe(0);
  });

  it("retries failed attempts by the job's attempts, then fails them for good; a final failure at once", async () => {
    const q = await filled(3, 2);
    const { store: s } = store('public', q.name, 5000);
    const [x, y, z] = (await fetchJobs(s, 't1', 3)).map((j) => j[0]);
    expect(await s.fail('t1', [{ id: x as string, attemptsMade: 0, reason: 'bad payload', final: true }], false)).toEqual([x]);
    expect(await s.fail('t1', [y, z].map((id) => ({ id: id as string, attemptsMade: 0, reason: 'boom', final: false })), true)).toEqual([]);
    const again = await fetchJobs(s, 't2', 3);
    expect(again.map((j) => [j[0], j[3]])).toEqual([[y, 1], [z, 1]]);
    expect(await s.fail('t2', again.map(([id]) => ({ id, attemptsMade: 1, reason: 'boom', final: false })), true)).toEqual([y, z]);
    const failed = await q.queue.getFailed();
    expect(failed.map((j) => [j.id, j.failedReason, j.attemptsMade]).sort()).toEqual([[x, 'bad payload', 1], [y, 'boom', 2], [z, 'boom', 2]].sort());
  });
});
