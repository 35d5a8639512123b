/**
 * One batch job's queue run by a public and a fast batch store at once (a rolling upgrade of BullMQ;
 * @tickwork/bullmq-engine batch/batch-lua-mixed.ts), the stores driven directly on a private Redis. A public
 * store that died between its commit and its acknowledgements leaves its jobs active under locks: the fast
 * store takes them back once the locks expire, not as stalls, and completes them without handing them to a
 * handler (kept as its completions are, BullMQ's `completed` event each), each done record dropped. Its
 * scan drops the public mark once no public store can hold a job, and records no delivery will use. Where
 * no public store ever ran, the fast store writes none of those keys.
 */
import type { BatchStore, FetchedBatchJob } from '@tickwork/bullmq-engine';
import { createFastBatchStore, createPublicBatchStore } from '@tickwork/bullmq-engine/testing';
import { createRedis, EVENTS_MAX_LEN, keyspaceOn, RedisTx, type RedisClient } from '@tickwork/core';
import { startRedisServer, waitFor, type RedisServerHandle } from '@tickwork/testkit';
import { Queue } from 'bullmq';
import type { Redis } from 'ioredis';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { batchJob } from '../testing/batch-fixtures.js';

const PREFIX = 'mx';
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

/** A fresh queue holding `n` bt.sum jobs, a Queue on it, and its keys. */
async function filled(n: number): Promise<{ name: string; queue: Queue; ids: string[]; key: (suffix: string) => string }> {
  const name = `mx-${queueNo++}`;
  const queue = new Queue(name, { connection: createRedis(server.url, 'command'), prefix: PREFIX });
  closing.push(() => queue.close());
  const jobs = await queue.addBulk(Array.from({ length: n }, (_, i) => ({ name: 'bt.sum', data: { n: i } })));
  return { name, queue, ids: jobs.map((j) => String(j.id)), key: (suffix) => `${PREFIX}:${name}:${suffix}` };
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

const refs = (jobs: FetchedBatchJob[]) => jobs.map(([jobId, , , made]) => ({ jobId, attempt: made + 1 }));
const ids = (jobs: FetchedBatchJob[]) => jobs.map((j) => j[0]).sort();

describe('a batch queue run by a public and a fast store', () => {
  it('completes without running the jobs a dead public store committed, once their locks expire', async () => {
    const q = await filled(10);
    const a = store('public', q.name, 500);
    const committed = await fetchJobs(a.store, 'tA', 6);
    // A's BullMQ connection is gone: its acknowledgements never reach Redis, as if it died after its commit.
    a.blocking.disconnect();
    expect(await a.store.complete('tA', refs(committed), new RedisTx().incrby('mx:effects', committed.length))).toBe('done');
    expect(await redis.hlen(q.key('batch-done'))).toBe(6);

    // 2 s: longer than its own fetch-to-complete on a busy machine, short enough for the wait below.
    const f = store('fast', q.name, 2000);
    // The fast fetch takes the waiting jobs only: A's are active, under their locks.
    const rest = await fetchJobs(f.store, 'f1', 10);
    expect(ids(rest)).toEqual(q.ids.filter((id) => !committed.some((j) => j[0] === id)).sort());
    expect(await f.store.complete('f1', refs(rest), new RedisTx().incrby('mx:effects', rest.length))).toBe('done');

    // Once the locks expired, a scan takes A's jobs back (not as stalls); the next fetch completes them.
    const reclaimed = { back: 0, failed: [] as string[], orphans: 0 };
    await waitFor(async () => {
      const r = await f.store.reclaimExpired();
      reclaimed.back += r.back;
      reclaimed.failed.push(...r.failed);
      reclaimed.orphans += r.orphans ?? 0;
      return (await q.queue.getActiveCount()) === 0;
    }, { timeoutMs: 10_000, what: "A's jobs taken back by the fast store" });
    expect(reclaimed).toEqual({ back: 6, failed: [], orphans: 6 });
    expect(await f.store.fetch('f2', 10)).toEqual({ kind: 'empty' });

    expect(Number(await redis.get('mx:effects'))).toBe(10);
    expect(await redis.hlen(q.key('batch-done'))).toBe(0);
    expect(await q.queue.getJobCounts('wait', 'active', 'completed', 'failed')).toEqual({ wait: 0, active: 0, completed: 10, failed: 0 });
    for (const [id] of committed) {
      const job = await q.queue.getJob(id);
      expect([job?.attemptsMade, job?.stalledCounter, job?.returnvalue, typeof job?.finishedOn]).toEqual([1, 0, null, 'number']);
    }
    const events = (await redis.xrange(q.key('events'), '-', '+')).map(([, fields]) => fields);
    const completedIds = events.filter((e) => e[1] === 'completed').map((e) => e[3] as string);
    expect(completedIds.sort()).toEqual(ids(committed));
    expect(events.filter((e) => e[1] === 'stalled')).toEqual([]);
  });

  it('drops the public mark once no public store can hold a job, and done records no delivery will use', async () => {
    const q = await filled(3);
    const [x, y, z] = q.ids as [string, string, string];
    const f = store('fast', q.name, 2000);
    const first = await fetchJobs(f.store, 'f1', 1);
    expect(first.map((j) => j[0])).toEqual([x]);
    expect(await f.store.complete('f1', refs(first), new RedisTx())).toBe('done');
    const stamp = async (id: string) => String((await q.queue.getJob(id))?.timestamp);
    // x completed, `gone` removed, y's record another job's (its timestamp differs): dropped. z waits: kept.
    await redis.hset(q.key('batch-done'), x, await stamp(x), 'gone', '1', y, '1', z, await stamp(z));
    await redis.set(q.key('batch-public'), Date.now() + 60_000);
    await waitFor(async () => (await f.store.reclaimExpired()) && (await redis.hlen(q.key('batch-done'))) === 1, { what: 'the stale records dropped' });
    expect(await redis.hkeys(q.key('batch-done'))).toEqual([z]);
    // The mark's time has not passed: kept. Once it has, and no job is locked, the next scan drops it.
    expect(await redis.exists(q.key('batch-public'))).toBe(1);
    await redis.set(q.key('batch-public'), Date.now() - 1);
    await waitFor(async () => (await f.store.reclaimExpired()) && (await redis.exists(q.key('batch-public'))) === 0, { what: 'the mark dropped' });
    // z's record still completes it without running; y runs.
    expect((await fetchJobs(f.store, 'f2', 3)).map((j) => j[0])).toEqual([y]);
    expect(await q.queue.getJobState(z)).toBe('completed');
    expect(await redis.exists(q.key('batch-done'))).toBe(0);
  });

  it('writes none of the public keys on a queue no public store ran', async () => {
    const q = await filled(5);
    // A lease that outlasts the test on any machine: the scan must find nothing expired to take back.
    const f = store('fast', q.name, 60_000);
    const jobs = await fetchJobs(f.store, 'f1', 5);
    expect(await f.store.reclaimExpired()).toEqual({ back: 0, failed: [], orphans: 0 });
    expect(await f.store.complete('f1', refs(jobs), new RedisTx())).toBe('done');
    expect(await redis.exists(q.key('batch-public'), q.key('batch-public-scan'), q.key('batch-done'))).toBe(0);
  });
});
