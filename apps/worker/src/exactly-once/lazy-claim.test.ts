/**
 * When a run is claimed (README, "When a run is claimed"): a job's first delivery whose run lives in the
 * job's own hash claims at its first effect, not before its handler starts. What a user relies on:
 * - effects in steps still happen once: a step on a run another delivery completed or holds does not run;
 * - a handler without steps records its result as before (claim and completion in one write);
 * - the documented cost: a handler without steps may run beside a redelivery of its job; it is counted,
 *   and the run's record keeps the other delivery's result.
 */
import {
  createCatalog,
  createExactlyOnce,
  defineJob,
  duplicatesRanUnclaimed,
  IdempotencyLedger,
  jobRecordKey,
  runExactlyOnce,
  type ExactlyOnce,
  type RunExactlyOnceOptions,
} from '@tickwork/runtime';
import { startRedisServer, waitFor, type RedisServerHandle } from '@tickwork/testkit';
import { Queue, type Job } from 'bullmq';
import type { Redis } from 'ioredis';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { createProcessor } from '../processor.js';

let server: RedisServerHandle;
let redis: Redis;
let queue: Queue;
let eo: ExactlyOnce;
let ledger: IdempotencyLedger;
const silent = pino({ level: 'silent' });
const labels = { queue: 'lz', job: 'lz.job' };

beforeAll(async () => {
  server = await startRedisServer();
  redis = server.client();
  queue = new Queue('lz', { connection: server.client(), prefix: 'tw' });
  eo = createExactlyOnce(redis, { prefix: 'tw', leaseMs: 60_000 });
  ledger = eo.ledger;
});
afterAll(async () => {
  await queue.close();
  await server.stop();
});

class Deferred extends Error {}

/** A new job with a BullMQ-generated id: its run lives in its hash. */
async function newRun() {
  const job = await queue.add('lz.job', {});
  const jobKey = jobRecordKey('tw', 'lz', String(job.id));
  const key = `lz.job#${job.id}`;
  const place = { kind: 'job', jobKey } as const;
  const opts: RunExactlyOnceOptions = {
    key,
    place,
    log: silent,
    labels,
    lazy: true,
    defer: async () => {
      throw new Deferred();
    },
  };
  return { job, key, place, opts };
}

const unclaimedCount = async () => (await duplicatesRanUnclaimed.get()).values.find((v) => v.labels.job === 'lz.job')?.value ?? 0;

describe('a lazily claimed run', () => {
  it('records a handler without steps as done, claimed once, with no key of its own', async () => {
    const { key, place, opts } = await newRun();
    expect(await runExactlyOnce(eo, opts, async () => 'result')).toBe('result');
    expect(await ledger.inspect(key, place)).toMatchObject({ state: 'done', claims: 1, result: 'result' });
    expect(await redis.keys('tw:ledger:*')).toEqual([]);
  });

  it('claims the new run in the redisStep script: the writes and the record commit once', async () => {
    const { key, place, opts } = await newRun();
    const result = await runExactlyOnce(eo, opts, async (run) => run.redisStep('write', (tx) => (tx.incrby(`lz:count:${key}`, 1), 'wrote')));
    expect(result).toBe('wrote');
    expect(await redis.get(`lz:count:${key}`)).toBe('1');
    expect(await ledger.inspect(key, place)).toMatchObject({ state: 'done', claims: 1, result: 'wrote' });
  });

  it('does not run a step when another delivery completed the run: it returns the recorded result', async () => {
    const { key, place, opts } = await newRun();
    const other = await ledger.claim(key, place, 'other');
    if (other.kind !== 'claimed') throw new Error('setup: expected a claim');
    await other.run.complete('theirs');
    let stepRan = false;
    let handlerStarted = false;
    const result = await runExactlyOnce(eo, opts, async (run) => {
      handlerStarted = true;
      await run.step('effect', async () => (stepRan = true));
      return 'mine';
    });
    expect(handlerStarted).toBe(true); // code before the first effect runs: effects belong in steps
    expect(stepRan).toBe(false);
    expect(result).toBe('theirs');
  });

  it('defers the delivery at its first step when another delivery holds the run, even if the handler catches the refusal', async () => {
    const { key, place, opts } = await newRun();
    expect((await ledger.claim(key, place, 'other')).kind).toBe('claimed');
    let stepRan = false;
    const outcome = runExactlyOnce(eo, opts, async (run) => {
      await run.redisStep('write', (tx) => (tx.incrby(`lz:count:${key}`, 1), 'x')).catch(() => undefined);
      await run.step('effect', async () => (stepRan = true)).catch(() => undefined);
      return 'mine';
    });
    await expect(outcome).rejects.toBeInstanceOf(Deferred);
    expect(stepRan).toBe(false);
    expect(await redis.get(`lz:count:${key}`)).toBeNull();
    expect(await ledger.inspect(key, place)).toMatchObject({ state: 'running', owner: 'other' });
  });

  it("takes over an expired run at its first redisStep and does not apply a step the previous holder recorded", async () => {
    const { key, place, opts } = await newRun();
    const shortLease = new IdempotencyLedger(redis, { prefix: 'tw', leaseMs: 100 });
    const other = await shortLease.claim(key, place, 'other');
    if (other.kind !== 'claimed') throw new Error('setup: expected a claim');
    expect(await other.run.recordTxStep('write', 'theirs', [['INCRBY', `lz:count:${key}`, 1]])).toBe(true);
    await waitFor(async () => {
      const entry = await ledger.inspect(key, place);
      const [seconds] = await redis.time();
      return entry?.leaseUntil !== undefined && entry.leaseUntil.getTime() < Number(seconds) * 1000 - 1000;
    }, { timeoutMs: 10_000, what: "the other delivery's lease expired" });
    const result = await runExactlyOnce(eo, opts, async (run) => run.redisStep('write', (tx) => (tx.incrby(`lz:count:${key}`, 1), 'mine')));
    expect(result).toBe('theirs');
    expect(await redis.get(`lz:count:${key}`)).toBe('1');
    expect(await ledger.inspect(key, place)).toMatchObject({ state: 'done', claims: 2 });
  });

  it('runs a handler without steps beside a delivery that holds the run: counted, and the holder keeps the run', async () => {
    const { key, place, opts } = await newRun();
    expect((await ledger.claim(key, place, 'other')).kind).toBe('claimed');
    const before = await unclaimedCount();
    expect(await runExactlyOnce(eo, opts, async () => 'mine')).toBe('mine');
    expect(await unclaimedCount()).toBe(before + 1);
    expect(await ledger.inspect(key, place)).toMatchObject({ state: 'running', owner: 'other' });
  });

  it('gives the run back when the handler fails after its first effect, keeping the step', async () => {
    const { key, place, opts } = await newRun();
    const failing = runExactlyOnce(eo, opts, async (run) => {
      await run.step('effect', async () => 1);
      throw new Error('boom');
    });
    await expect(failing).rejects.toThrow('boom');
    expect(await ledger.inspect(key, place)).toMatchObject({ state: 'idle', claims: 1, steps: { effect: 1 } });
  });
});

describe('the worker: a stalled original and its redelivery', () => {
  /**
   * The original delivery (first start) waits inside its handler until released; meanwhile the job is
   * redelivered (BullMQ counts a second start), and the redelivery claims up front and completes the run.
   */
  async function originalAndRedelivery(handler: (ctx: Parameters<typeof lzJob.handler>[0]) => Promise<unknown>) {
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    let started!: () => void;
    const originalStarted = new Promise<void>((resolve) => (started = resolve));
    let deliveries = 0;
    const job = defineJob({
      name: 'lz.job',
      queue: 'lz',
      schema: z.object({}),
      handler: async (ctx) => {
        if (++deliveries === 1) {
          started();
          await gate;
        }
        return handler(ctx);
      },
    });
    const processor = createProcessor({
      catalog: createCatalog([job]),
      redis,
      log: silent,
      exactlyOnce: eo,
      enqueue: async () => ({ id: 'unused' }),
    });
    const added = await queue.add('lz.job', {});
    const original = processor((await queue.getJob(String(added.id))) as Job);
    await originalStarted;
    await redis.hset(jobRecordKey('tw', 'lz', String(added.id)), 'ats', 2);
    const redelivered = await processor((await queue.getJob(String(added.id))) as Job);
    release();
    return { id: String(added.id), original: await original, redelivered };
  }
  const lzJob = defineJob({ name: 'lz.job', queue: 'lz', schema: z.object({}), handler: async () => null });

  it('a step-less handler runs in both (its effects are not exactly-once); the run keeps the redelivery\'s result', async () => {
    const before = await unclaimedCount();
    const runs: string[] = [];
    const { id, original, redelivered } = await originalAndRedelivery(async (ctx) => {
      runs.push(ctx.jobId);
      return { attempt: runs.length };
    });
    expect(runs).toHaveLength(2);
    expect(redelivered).toEqual({ attempt: 1 });
    expect(original).toEqual({ attempt: 2 });
    expect(await unclaimedCount()).toBe(before + 1);
    const place = { kind: 'job', jobKey: jobRecordKey('tw', 'lz', id) } as const;
    expect(await ledger.inspect(`lz.job#${id}`, place)).toMatchObject({ state: 'done', claims: 1, result: { attempt: 1 } });
  });

  it('a handler whose effect is a step makes it once: the original gets the recorded result', async () => {
    const { id, original, redelivered } = await originalAndRedelivery(async (ctx) => {
      const n = await ctx.step('effect', () => redis.incr(`lz:effects:${ctx.jobId}`));
      return { effects: n };
    });
    expect(await redis.get(`lz:effects:${id}`)).toBe('1');
    expect(redelivered).toEqual({ effects: 1 });
    expect(original).toEqual({ effects: 1 });
  });
});
