/**
 * The lift (lift-ahead.ts): jobs added ahead as delayed jobs move to the head of the wait list, ahead of a
 * backlog, as a `lifo` add puts them, with BullMQ's `waiting` event; a job no longer delayed is left alone.
 */
import { createLogger, QueueSet } from '@tickwork/core';
import { startRedisServer, waitFor, type RedisServerHandle } from '@tickwork/testkit';
import { Worker, type Job } from 'bullmq';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLiftAhead, LIFT_CHUNK } from './lift-ahead.js';

let server: RedisServerHandle;
let redis: Redis;
let queues: QueueSet;
const log = createLogger('lift-test', 'silent');
beforeAll(async () => {
  server = await startRedisServer();
  redis = new Redis(server.url, { maxRetriesPerRequest: null });
  queues = new QueueSet(redis, 'tw', log);
});
afterAll(async () => {
  await queues.close();
  redis.disconnect();
  await server.stop();
});

describe('createLiftAhead', () => {
  it('moves delayed jobs to the head of the wait list, ahead of the backlog, and leaves the rest alone', async () => {
    const lift = createLiftAhead(queues, log);
    expect(lift).toBeDefined();
    const queue = queues.get('lifted');
    await queue.addBulk([1, 2, 3].map((n) => ({ name: 'plain', data: { n }, opts: { jobId: `backlog-${n}` } })));
    for (const id of ['a', 'b', 'gone', 'later']) await queue.add('occ', { id }, { jobId: id, delay: 60_000 });
    await queue.remove('gone');

    const now = Date.now();
    await lift!.note('lifted', [
      { id: 'a', at: now - 10 },
      { id: 'b', at: now },
      { id: 'gone', at: now },
      { id: 'missing', at: now },
      { id: 'later', at: now + 60_000 },
    ]);
    expect(await lift!.lift('lifted', now)).toBe(2);
    // Lifted once: nothing moves twice, and what is not due stays noted.
    await lift!.note('lifted', [{ id: 'a', at: now }]);
    expect(await lift!.lift('lifted', now)).toBe(0);
    expect(await redis.zrange(queue.toKey('tickwork-ahead'), '0', '-1')).toEqual(['later']);
    expect(await queue.getJobState('later')).toBe('delayed');
    expect(await queue.getJobState('a')).toBe('waiting');
    // Its delay is the time it spent delayed, so its wait counts from the lift.
    const a = await queue.getJob('a');
    expect(a!.timestamp + a!.delay).toBe(now);
    const events = await redis.xrange(queue.keys.events as string, '-', '+');
    const waiting = events.filter(([, f]) => f[1] === 'waiting' && f[5] === 'delayed').map(([, f]) => f[3]);
    expect(waiting.sort()).toEqual(['a', 'b']);

    // A worker takes the lifted jobs first (in the order due, the later first, as lifo adds), then the backlog.
    const order: string[] = [];
    const worker = new Worker('lifted', async (job: Job) => void order.push(job.id as string), { connection: new Redis(server.url, { maxRetriesPerRequest: null }), prefix: queue.opts.prefix, concurrency: 1 });
    try {
      await waitFor(() => order.length === 5, { timeoutMs: 20_000, what: 'the five jobs to run' });
    } finally {
      await worker.close();
    }
    expect(order).toEqual(['b', 'a', 'backlog-1', 'backlog-2', 'backlog-3']);
  });

  it('lifts more ids than one call takes', async () => {
    const lift = createLiftAhead(queues, log)!;
    const queue = queues.get('many');
    const ids = Array.from({ length: LIFT_CHUNK + 5 }, (_, i) => `m${i}`);
    await queue.addBulk(ids.map((id) => ({ name: 'occ', data: {}, opts: { jobId: id, delay: 60_000 } })));
    await lift.note('many', ids.map((id) => ({ id, at: 1 })));
    expect(await lift.lift('many')).toBe(ids.length);
    expect(await queue.getDelayedCount()).toBe(0);
    expect(await queue.getWaitingCount()).toBe(ids.length);
  });
});
