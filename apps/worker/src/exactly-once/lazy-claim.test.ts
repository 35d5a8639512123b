/**
 * When a run is claimed (README, "When a run is claimed"): a job's first delivery whose run lives in the
 * job's own hash claims at its first effect, not before its handler starts. What a user relies on:
 * - effects in steps still happen once: a step on a run another delivery completed or holds does not run;
 * - a handler without steps records its result as before (claim and completion in one write);
 * - the documented cost: a handler without steps may run beside a redelivery of its job; it is counted,
 *   and the run's record keeps the other delivery's result.
 */
import { createCatalog, defineJob } from '@tickwork/core';
import { createExactlyOnce, duplicatesRanUnclaimed, IdempotencyLedger, jobRecordKey, runExactlyOnce, type ExactlyOnce, type RunExactlyOnceOptions } from '@tickwork/exactly-once';
import { monitorRedis, startRedisServer, waitFor, type RedisServerHandle } from '@tickwork/testkit';
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

/**
 * A delivery the worker judges sole (recovery/sole-delivery.ts: no run record in the job's hash when it was
 * delivered, nothing can have delivered it again since): its steps run without claiming first, and the
 * claim rides with the record.
 */
describe('a lazily claimed run on a sole delivery', () => {
  const sole = (opts: RunExactlyOnceOptions, isSole: () => boolean = () => true): RunExactlyOnceOptions => Object.assign({}, opts, { deliveryIsSole: isSole });

  /** Runs `body` watching Redis with MONITOR; returns the commands clients sent (not those scripts ran). */
  async function watched<T>(body: () => Promise<T>): Promise<{ value: T; commands: string[][] }> {
    const commands: string[][] = [];
    const monitor = await monitorRedis(server, ({ args, source }) => source !== 'lua' && commands.push(args));
    try {
      const value = await body();
      await redis.ping(); // MONITOR lines arrive in order: this one's shows the run's have all arrived
      await waitFor(async () => commands.some((c) => c[0]?.toLowerCase() === 'ping'), { timeoutMs: 5_000, what: 'the last MONITOR line' });
      return { value, commands };
    } finally {
      monitor.stop();
    }
  }

  it("runs a step at once; its claim and record ride with the completion: one ledger write after the effect", async () => {
    const { key, place, opts } = await newRun();
    const effect = `lz:effects:${key}`;
    const { value, commands } = await watched(() => runExactlyOnce(eo, sole(opts), async (run) => run.step('charge', () => redis.incr(effect))));
    expect(value).toBe(1);
    expect(await redis.get(effect)).toBe('1');
    expect(await ledger.inspect(key, place)).toMatchObject({ state: 'done', claims: 1, result: 1 });
    const ledgerWrites = commands.filter((c) => /^eval(sha)?$/i.test(c[0] ?? '') && c.includes(place.jobKey));
    expect(ledgerWrites).toHaveLength(1);
    const effectAt = commands.findIndex((c) => c[0]?.toLowerCase() === 'incr' && c[1] === effect);
    expect(effectAt).toBeGreaterThanOrEqual(0);
    expect(commands.indexOf(ledgerWrites[0] as string[])).toBeGreaterThan(effectAt);
  });

  it("records a step (with the claim) before the handler's next step starts", async () => {
    const { key, place, opts } = await newRun();
    let seenBySecond: unknown;
    const result = await runExactlyOnce(eo, sole(opts), async (run) => {
      await run.step('first', () => redis.incr(`lz:effects:${key}`));
      return run.step('second', async () => (seenBySecond = await ledger.inspect(key, place)));
    });
    expect(seenBySecond).toMatchObject({ state: 'running', claims: 1, steps: { first: 1 } });
    expect(result).toMatchObject({ state: 'running' });
    expect(await ledger.inspect(key, place)).toMatchObject({ state: 'done', claims: 1 });
  });

  it('records a step run before the claim when the handler then waits, and when it fails: a retry does not run it again', async () => {
    const { key, place, opts } = await newRun();
    let seenWhileWaiting: unknown;
    const failing = runExactlyOnce(eo, sole(opts), async (run) => {
      await run.step('effect', () => redis.incr(`lz:effects:${key}`));
      // The turn ends here: the step's record (with the claim) is written without waiting for the result.
      await waitFor(async () => (seenWhileWaiting = await ledger.inspect(key, place))?.claims === 1, { timeoutMs: 5_000, what: 'the step recorded' });
      throw new Error('boom');
    });
    await expect(failing).rejects.toThrow('boom');
    expect(seenWhileWaiting).toMatchObject({ state: 'running', steps: { effect: 1 } });
    expect(await ledger.inspect(key, place)).toMatchObject({ state: 'idle', claims: 1, steps: { effect: 1 } });

    const failingAtOnce = await newRun();
    await expect(runExactlyOnce(eo, sole(failingAtOnce.opts), async (run) => {
      await run.step('effect', () => redis.incr(`lz:effects:${failingAtOnce.key}`));
      throw new Error('boom');
    })).rejects.toThrow('boom');
    expect(await ledger.inspect(failingAtOnce.key, failingAtOnce.place)).toMatchObject({ state: 'idle', claims: 1, steps: { effect: 1 } });
    // The retry (claimed up front) resumes from the recorded step.
    let ranAgain = false;
    const retry = { ...failingAtOnce.opts, lazy: false };
    expect(await runExactlyOnce(eo, retry, async (run) => run.step('effect', async () => ((ranAgain = true), 99)))).toBe(1);
    expect(ranAgain).toBe(false);
    expect(await redis.get(`lz:effects:${failingAtOnce.key}`)).toBe('1');
  });

  it('fails the attempt when its result cannot be recorded, keeping the step run before the claim: a retry does not run it again', async () => {
    const { key, place, opts } = await newRun();
    const effect = `lz:effects:${key}`;
    // JSON has no BigInt: the result cannot be encoded, so the run cannot be recorded done.
    await expect(runExactlyOnce(eo, sole(opts), async (run) => (await run.step('effect', () => redis.incr(effect)), BigInt(10)))).rejects.toThrow(TypeError);
    expect(await ledger.inspect(key, place)).toMatchObject({ state: 'idle', claims: 1, steps: { effect: 1 } });
    let ranAgain = false;
    expect(await runExactlyOnce(eo, { ...opts, lazy: false }, async (run) => run.step('effect', async () => ((ranAgain = true), 99)))).toBe(1);
    expect(ranAgain).toBe(false);
    expect(await redis.get(effect)).toBe('1');
  });

  it('asks whether the delivery is sole as each step starts: no longer sole, the step claims first and does not run on a run another delivery holds', async () => {
    const { key, place, opts } = await newRun();
    let isSole = true;
    let stepRan = false;
    const outcome = runExactlyOnce(eo, sole(opts, () => isSole), async (run) => {
      // Meanwhile this delivery stalled, the job was delivered again, and the redelivery claimed the run.
      expect((await ledger.claim(key, place, 'other')).kind).toBe('claimed');
      isSole = false;
      return run.step('effect', async () => (stepRan = true));
    });
    await expect(outcome).rejects.toBeInstanceOf(Deferred);
    expect(stepRan).toBe(false);
    expect(await ledger.inspect(key, place)).toMatchObject({ state: 'running', owner: 'other' });
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
