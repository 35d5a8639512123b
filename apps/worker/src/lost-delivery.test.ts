/**
 * A delivery lost with its connection (recovery/lost-deliveries.ts): Redis ran BullMQ's moveToActive for a
 * Worker and the reply never came back, so the job sits in `active` under that Worker's token and nobody
 * runs it. Here the lost reply is set up directly in Redis (what moveToActive leaves: the job in `active`,
 * its lock holding the Worker's token), then the Worker's connection is killed, as a failover does.
 */
import { createCatalog, defineJob, jobOptions, type QueueSet } from '@tickwork/core';
import { waitFor } from '@tickwork/testkit';
import type { Worker } from 'bullmq';
import type { Redis } from 'ioredis';
import { afterAll, beforeAll, expect, it, vi } from 'vitest';
import { z } from 'zod';
import { startPoolFixture, type PoolFixture } from './testing/pool-fixture.js';
import { ackConnectionOf } from '@tickwork/bullmq-engine/testing';

vi.setConfig({ testTimeout: 60_000, hookTimeout: 60_000 });

const Q = 'lost-deliveries';
const RUNS = 'test:lost:runs';
const GATE = 'test:lost:gate';
/** The lock and the stall check are 30 s each by default: BullMQ alone would take the job back after 30 to 60 s. */
const WITHIN_MS = 10_000;

const recorder = defineJob({
  name: 't.lost',
  queue: Q,
  schema: z.object({ n: z.number(), gated: z.boolean().default(false) }),
  async handler(ctx) {
    await ctx.redis.rpush(RUNS, String(ctx.data.n));
    while (ctx.data.gated && !(await ctx.redis.get(GATE))) await new Promise((r) => setTimeout(r, 20));
    return 'ran';
  },
});

let fx: PoolFixture;
let redis: Redis;
let queues: QueueSet;
let worker: Worker;

beforeAll(async () => {
  fx = await startPoolFixture(createCatalog([recorder]), [Q]);
  ({ redis, queues } = fx);
  const w = fx.pool.workers[0];
  if (!w) throw new Error('the pool runs no worker');
  worker = w;
});
afterAll(() => fx?.stop());

const runs = async () => (await redis.lrange(RUNS, 0, -1)).map(Number);

it('a job whose delivery was lost with the connection runs within seconds, not after its lock expires; a running job is left alone', async () => {
  // A job this worker is running (it waits at its gate) while the check looks.
  const running = await queues.get(Q).add(recorder.name, { n: 1, gated: true }, jobOptions(recorder));
  await waitFor(async () => (await runs()).includes(1), { what: 'the gated job running' });
  const runningLock = await redis.get(`${worker.toKey(running.id as string)}:lock`);

  // The lost reply: a job moved to active under this Worker's token, as moveToActive does, and never received.
  const lost = await queues.get(Q).add(recorder.name, { n: 2 }, { ...jobOptions(recorder), delay: 3_600_000 });
  const id = lost.id as string;
  await redis
    .multi()
    .zrem(worker.keys.delayed as string, id)
    .lpush(worker.keys.active as string, id)
    .set(`${worker.toKey(id)}:lock`, `${worker.id}:lost`, 'PX', 30_000)
    .hset(worker.toKey(id), 'processedOn', Date.now())
    .exec();

  // The failover: the Worker's connection drops.
  const connection = (await ackConnectionOf(worker)) as unknown as Redis;
  const clientId = await connection.client('ID');
  const killedAt = Date.now();
  await redis.client('KILL', 'ID', String(clientId));

  await waitFor(async () => (await runs()).includes(2), { timeoutMs: WITHIN_MS, what: 'the lost job to run' });
  const tookMs = Date.now() - killedAt;
  expect(tookMs).toBeLessThan(WITHIN_MS);
  const takeBack = fx.captured.entries().find((e) => e.msg?.toString().startsWith('took back a job delivered to this worker'));
  expect(takeBack).toMatchObject({ queue: Q, jobId: id });
  // It never ran before, so no stall is counted against it.
  await waitFor(async () => (await queues.get(Q).getJobState(id)) === 'completed', { what: 'the lost job completed' });
  expect(await redis.hget(worker.toKey(id), 'stc')).toBeNull();

  // The running job was seen by the same checks (two, a beat apart, took the lost one back) and left alone.
  expect(await redis.get(`${worker.toKey(running.id as string)}:lock`)).toBe(runningLock);
  await redis.set(GATE, '1');
  await waitFor(async () => (await queues.get(Q).getJobState(running.id as string)) === 'completed', { what: 'the gated job completed' });
  expect(await runs()).toEqual([1, 2]);
});
