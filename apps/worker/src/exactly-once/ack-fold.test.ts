/**
 * A result recorded in the job's own hash rides in BullMQ's acknowledgement of that job (ack-fold.ts): one
 * script call per no-op job instead of two. What a user relies on: the record is there, done, with the
 * result, and it ran before the acknowledgement (same script); a refused completion is still counted; a
 * completion BullMQ never acknowledges is written anyway.
 */
import { completionWriter, CompletionWriter, createExactlyOnce, duplicatesRanUnclaimed, jobRecordKey, type ExactlyOnce } from '@tickwork/exactly-once';
import { createCatalog, defineJob } from '@tickwork/core';
import { createEngine } from '@tickwork/bullmq-engine';
import { ackConnectionOf, foldAcks } from '@tickwork/bullmq-engine/testing';
import { monitorRedis, startRedisServer, waitFor, type RedisServerHandle } from '@tickwork/testkit';
import { Queue, Worker } from 'bullmq';
import type { Redis } from 'ioredis';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { createProcessor } from '../processor.js';

let server: RedisServerHandle;
let redis: Redis;
let eo: ExactlyOnce;
/** The worker's engine on its fast path: the connection it hands out has results folded into its acknowledgements. */
const engine = createEngine({ log: pino({ level: 'silent' }) });
const foldedAcksOf = (worker: Worker) => (engine.ackConnectionOf as NonNullable<typeof engine.ackConnectionOf>)(worker);

const silent = pino({ level: 'silent' });

const fold = defineJob({ name: 'af.noop', queue: 'af', schema: z.object({ i: z.number() }), handler: async (ctx) => ({ i: ctx.data.i }) });
const keyed = defineJob({ name: 'af.keyed', queue: 'af', schema: z.object({ i: z.number() }), idempotencyKey: (d) => `k${d.i}`, handler: async (ctx) => ({ i: ctx.data.i }) });
/** Deletes its own job's BullMQ lock, as a failover that lost the lock's last write would. */
const lockLost = defineJob({
  name: 'af.lock-lost',
  queue: 'af',
  schema: z.object({}),
  handler: async (ctx) => (await ctx.redis.del(`${jobRecordKey('tw', 'af', ctx.jobId)}:lock`), 'done'),
});
/** Hands its own job's BullMQ lock to another token, as a redelivery after a stall would have. */
const lockTaken = defineJob({
  name: 'af.lock-taken',
  queue: 'af',
  schema: z.object({}),
  handler: async (ctx) => (await ctx.redis.set(`${jobRecordKey('tw', 'af', ctx.jobId)}:lock`, 'another-token'), 'done'),
});
/**
 * Eight jobs that finish in one event-loop turn (each waits until all have started), so their
 * acknowledgements share script calls; the one with `bad` first breaks its own BullMQ lock (a hash where
 * BullMQ keeps a string), so BullMQ's script raises an error for its acknowledgement alone.
 */
const TOGETHER = 8;
let started = 0;
let allStarted: () => void = () => undefined;
let together = new Promise<void>((resolve) => (allStarted = resolve));
/** Resolves once all TOGETHER jobs of a test have started, so that they finish in one event-loop turn. */
async function gathered(i: number): Promise<{ i: number }> {
  if (++started === TOGETHER) allStarted();
  await together;
  return { i };
}
/** For a test that runs the `af.together` jobs again. */
function gatherAgain(): void {
  started = 0;
  together = new Promise<void>((resolve) => (allStarted = resolve));
}
const batched = defineJob({
  name: 'af.together',
  queue: 'af',
  schema: z.object({ i: z.number(), bad: z.boolean() }),
  handler: async (ctx) => {
    if (ctx.data.bad) {
      const lock = `${jobRecordKey('tw', 'af', ctx.jobId)}:lock`;
      await ctx.redis.del(lock);
      await ctx.redis.hset(lock, 'not', 'a lock');
    }
    return gathered(ctx.data.i);
  },
});
/** A Redis step, then the gathering as `af.together`: its run is claimed once, by the step's script. */
const stepTogether = defineJob({
  name: 'af.step-together',
  queue: 'af',
  schema: z.object({ i: z.number() }),
  handler: async (ctx) => {
    await ctx.redisStep('count', (tx) => (tx.incrby(`af:count:${ctx.data.i}`, 1), null));
    return gathered(ctx.data.i);
  },
});
/** A Redis step, then a failure on the first attempt: the retry claims the run a second time. */
const stepRetried = defineJob({
  name: 'af.step-retried',
  queue: 'af',
  schema: z.object({}),
  handler: async (ctx) => {
    await ctx.redisStep('count', (tx) => (tx.incrby('af:count:retried', 1), null));
    if (ctx.attempt === 1) throw new Error('first attempt fails after its step');
    return 'second';
  },
});
const catalog = createCatalog([fold, keyed, lockLost, lockTaken, batched, stepTogether, stepRetried]);

beforeAll(async () => {
  server = await startRedisServer();
  redis = server.client();
  eo = createExactlyOnce(redis, { prefix: 'tw', leaseMs: 60_000 });
});
afterAll(async () => {
  await server.stop();
});

/**
 * The stock processor on a BullMQ Worker, as worker-pool.ts runs it; resolves once `count` jobs completed.
 * Concurrency 1: each job finishes alone in its event-loop turn, so its result rides in its acknowledgement
 * (several finishing in one turn: the first does, the others are written ahead together).
 */
async function drain(count: number, concurrency = 1, errors: Error[] = []): Promise<void> {
  let done = 0;
  const processor = createProcessor({ catalog, redis, log: silent, exactlyOnce: eo, enqueue: async () => ({ id: 'unused' }), ackConnectionOf: () => foldedAcksOf(worker) });
  const worker: Worker = new Worker('af', processor, { connection: server.client(), prefix: 'tw', concurrency });
  worker.on('completed', () => done++);
  worker.on('error', (err) => errors.push(err));
  try {
    await waitFor(async () => done === count, { timeoutMs: 15_000, what: `${count} jobs completed` });
  } finally {
    await worker.close();
  }
}

/**
 * Drains `count` jobs named `name` (data `{ i }`, or `dataOf(i)`) at concurrency 1 (or `concurrency`, until
 * `completing` of them completed), watching Redis with MONITOR; returns the jobs and the scripts clients sent.
 */
async function drainWatched(name: string, count: number, opts: { dataOf?: (i: number) => object; concurrency?: number; completing?: number; errors?: Error[] } = {}) {
  const seen: string[][] = [];
  const monitor = await monitorRedis(server, ({ args, source }) => source !== 'lua' && seen.push(args));
  const queue = new Queue('af', { connection: server.client(), prefix: 'tw' });
  try {
    const jobs = await queue.addBulk(Array.from({ length: count }, (_, i) => ({ name, data: opts.dataOf?.(i) ?? { i } })));
    await drain(opts.completing ?? jobs.length, opts.concurrency, opts.errors);
    return { jobs, scripts: seen.filter((a) => /^eval(sha)?$/i.test(a[0] ?? '')) };
  } finally {
    monitor.stop();
    await queue.close();
  }
}

const unclaimed = async (job = 'af.noop') => (await duplicatesRanUnclaimed.get()).values.find((v) => v.labels.job === job)?.value ?? 0;

/** Whether a script call names `jobKey`: as a word, or in a compact acknowledgement (one JSON array: runtime ack-fold-lua.ts). */
function namesJob(call: readonly string[], jobKey: string): boolean {
  return call.some((w) => w === jobKey || (w.startsWith('[') && w.includes(JSON.stringify(jobKey))));
}

describe('a result recorded in its job\'s hash', () => {
  it('goes in the job\'s acknowledgement: one script call per job, the record done with the result', async () => {
    const { jobs, scripts: all } = await drainWatched('af.noop', 30);
    const writtenAhead: string[] = [];
    for (const job of jobs) {
      const jobKey = jobRecordKey('tw', 'af', String(job.id));
      const scripts = all.filter((a) => namesJob(a, jobKey));
      // BullMQ's moveToActive names the job by id, not key: what names the job's key is its acknowledgement,
      // and, for a completion BullMQ did not acknowledge in its turn, the write ahead of it (one, before it).
      // An acknowledgement carrying no completion of its own names the job only inside its compact word.
      const [ack, ...before] = [...scripts].reverse();
      expect({ id: job.id, lastAcknowledges: ack?.includes('tw:af:completed') }).toEqual({ id: job.id, lastAcknowledges: true });
      expect(before.every((a) => a[1] === CompletionWriter.scriptSha && !a.includes('tw:af:completed'))).toBe(true);
      if (before.length > 0) writtenAhead.push(String(job.id));
      expect((await redis.hget(jobKey, 'tw')) ?? '').toMatch(new RegExp(`^d\\|[^|]+\\|\\d+\\|1\\|.*"i":${String(job.data.i)}`));
      expect(await redis.hget(jobKey, 'returnvalue')).toBe(JSON.stringify({ i: job.data.i }));
    }
    // At concurrency 1 each completion rides in its acknowledgement. Twice, on a loaded machine, the first
    // job's completion was written ahead of its acknowledgement instead (two script calls, the record still
    // first, as ack-fold.ts does for a completion BullMQ does not acknowledge in its turn; why that first
    // acknowledgement came late is not established): allowed for one job in 30, never for most.
    expect(writtenAhead.length, `written ahead: ${writtenAhead.join(', ')}`).toBeLessThanOrEqual(1);
  });

  it('of a run never claimed is written, when its acknowledgement goes alone, by BullMQ\'s own script with the job\'s fields', async () => {
    const lua: string[][] = [];
    const monitor = await monitorRedis(server, ({ args, source }) => source === 'lua' && lua.push(args));
    const queue = new Queue('af', { connection: server.client(), prefix: 'tw' });
    try {
      const jobs = await queue.addBulk(Array.from({ length: 10 }, (_, i) => ({ name: 'af.noop', data: { i } })));
      await drain(jobs.length);
      let rode = 0;
      for (const job of jobs) {
        const jobKey = jobRecordKey('tw', 'af', String(job.id));
        const writes = lua.filter((a) => a[1] === jobKey && /^(hmset|hsetnx)$/i.test(a[0] ?? '') && a[2] === 'tw');
        // BullMQ's HMSET of the job's fields (ack-ride.ts), where the fold's Lua would HSETNX the record.
        const viaBullMQ = writes.length === 1 && /^hmset$/i.test(writes[0]?.[0] ?? '');
        if (viaBullMQ) rode++;
        // Riding, the record's time is the acknowledgement's (finishedOn); written ahead, the Redis server's.
        const time = viaBullMQ ? String(await redis.hget(jobKey, 'finishedOn')) : '\\d+';
        expect((await redis.hget(jobKey, 'tw')) ?? '').toMatch(new RegExp(`^d\\|[^|]+\\|${time}\\|1\\|.*"i":${String(job.data.i)}`));
      }
      // As in the test above, the first job's completion may be written ahead on a loaded machine.
      expect(rode).toBeGreaterThanOrEqual(jobs.length - 1);
    } finally {
      monitor.stop();
      await queue.close();
    }
  });

  it('refused by BullMQ because another token holds the job\'s lock is recorded anyway, and the job left to that holder', async () => {
    const queue = new Queue('af', { connection: server.client(), prefix: 'tw' });
    const errors: Error[] = [];
    const processor = createProcessor({ catalog, redis, log: silent, exactlyOnce: eo, enqueue: async () => ({ id: 'unused' }), ackConnectionOf: () => foldedAcksOf(worker) });
    const worker: Worker = new Worker('af', processor, { connection: server.client(), prefix: 'tw' });
    worker.on('error', (err) => errors.push(err));
    try {
      const job = await queue.add('af.lock-taken', {});
      const jobKey = jobRecordKey('tw', 'af', String(job.id));
      // A redelivery that claims now finds the run done and completes with its result (lazy-claim.test.ts).
      await waitFor(async () => /^d\|[^|]+\|\d+\|1\|.*"done"/.test((await redis.hget(jobKey, 'tw')) ?? ''), { timeoutMs: 10_000, what: 'the result recorded' });
      await waitFor(async () => errors.some((e) => /lock/i.test(e.message)), { timeoutMs: 10_000, what: "BullMQ's refusal reported" });
      expect(await queue.getJobState(String(job.id))).toBe('active');
      expect(await redis.get(`${jobKey}:lock`)).toBe('another-token');
    } finally {
      await worker.close();
      await queue.close();
    }
  });

  it('under a key of its own goes in the job\'s acknowledgement too', async () => {
    const { jobs, scripts } = await drainWatched('af.keyed', 10);
    for (const job of jobs) {
      const jobKey = jobRecordKey('tw', 'af', String(job.id));
      const withRecord = scripts.filter((a) => a.includes(eo.ledger.keyOf(`af.keyed@k${String(job.data.i)}`)));
      // Claimed up front on the ledger's connection; completed in the acknowledgement, never written ahead.
      const ahead = withRecord.filter((a) => a[1] === CompletionWriter.scriptSha);
      const ack = withRecord.at(-1) ?? [];
      expect({ id: job.id, ahead: ahead.length, lastIsAck: namesJob(ack, jobKey) && ack.includes('tw:af:completed') }).toEqual({ id: job.id, ahead: 0, lastIsAck: true });
      expect(await eo.ledger.inspect(`af.keyed@k${String(job.data.i)}`)).toMatchObject({ state: 'done', result: { i: job.data.i } });
    }
  });

  it('acknowledges a job whose BullMQ lock was lost while no one else took it', async () => {
    const queue = new Queue('af', { connection: server.client(), prefix: 'tw' });
    try {
      const job = await queue.add('af.lock-lost', {});
      await drain(1);
      expect(await queue.getJobState(String(job.id))).toBe('completed');
      expect(await redis.exists(`${jobRecordKey('tw', 'af', String(job.id))}:lock`)).toBe(0);
      expect(await redis.sismember('tw:af:stalled', String(job.id))).toBe(0);
    } finally {
      await queue.close();
    }
  });

  it('is recorded before its acknowledgement when many jobs finish together, in it or ahead of it', async () => {
    const queue = new Queue('af', { connection: server.client(), prefix: 'tw' });
    try {
      const jobs = await queue.addBulk(Array.from({ length: 200 }, (_, i) => ({ name: 'af.noop', data: { i } })));
      await drain(jobs.length, 20);
      for (const job of jobs) {
        expect((await redis.hget(jobRecordKey('tw', 'af', String(job.id)), 'tw')) ?? '').toMatch(new RegExp(`^d\\|[^|]+\\|\\d+\\|1\\|.*"i":${String(job.data.i)}`));
      }
    } finally {
      await queue.close();
    }
  });

  it('shares a script call with other acknowledgements, and one failing there fails no other', async () => {
    const errors: Error[] = [];
    const bad = TOGETHER - 1; // the last to finish: the first acknowledgement of a turn may go alone
    const { jobs, scripts } = await drainWatched('af.together', TOGETHER, { dataOf: (i) => ({ i, bad: i === bad }), concurrency: TOGETHER, completing: TOGETHER - 1, errors });
    const keyOf = (i: number) => jobRecordKey('tw', 'af', String(jobs[i]?.id));
    const acks = scripts.filter((a) => a.includes('tw:af:completed') && jobs.some((_, i) => a.includes(keyOf(i))));
    // Fewer script calls than acknowledgements, and the failing one shared its call with another job's.
    expect(acks.length).toBeLessThan(TOGETHER);
    const withBad = acks.find((a) => a.includes(keyOf(bad)));
    expect(jobs.some((_, i) => i !== bad && withBad?.includes(keyOf(i)))).toBe(true);
    for (let i = 0; i < TOGETHER; i++) {
      const state = await jobs[i]?.getState();
      if (i === bad) expect(state).toBe('active');
      else {
        expect(state).toBe('completed');
        expect(await redis.hget(keyOf(i), 'returnvalue')).toBe(JSON.stringify({ i }));
      }
    }
    expect(errors.some((e) => /WRONGTYPE/.test(e.message)), errors.map((e) => e.message).join('; ')).toBe(true);
  });

  it('of a run never claimed rides in acknowledgements sharing a script call; one whose hash holds a record goes again, counted', async () => {
    gatherAgain();
    const lua: string[][] = [];
    const calls: string[][] = [];
    const monitor = await monitorRedis(server, ({ args, source }) => (source === 'lua' ? lua : calls).push(args));
    const queue = new Queue('af', { connection: server.client(), prefix: 'tw' });
    try {
      const jobs = await queue.addBulk(Array.from({ length: TOGETHER }, (_, i) => ({ name: 'af.together', data: { i, bad: false } })));
      const keyOf = (i: number) => jobRecordKey('tw', 'af', String(jobs[i]?.id));
      const held = 3; // another delivery holds this run: its record is in the hash before its acknowledgement
      expect((await eo.ledger.claim(`af.together#${jobs[held]?.id}`, { kind: 'job', jobKey: keyOf(held) }, 'other')).kind).toBe('claimed');
      const before = await unclaimed('af.together');
      await drain(TOGETHER, TOGETHER);
      const acks = calls.filter((a) => /^eval(sha)?$/i.test(a[0] ?? '') && a.includes('tw:af:completed') && jobs.some((_, i) => a.includes(keyOf(i))));
      expect(acks.length).toBeLessThan(TOGETHER); // some acknowledgements shared a call
      for (let i = 0; i < TOGETHER; i++) {
        expect(await jobs[i]?.getState()).toBe('completed');
        const writes = lua.filter((a) => a[1] === keyOf(i) && /^(hmset|hsetnx)$/i.test(a[0] ?? '') && a[2] === 'tw');
        if (i === held) {
          expect(writes.filter((a) => /^hmset$/i.test(a[0] ?? ''))).toEqual([]); // the ride was refused: BullMQ wrote no record
          expect(await eo.ledger.inspect(`af.together#${jobs[i]?.id}`, { kind: 'job', jobKey: keyOf(i) })).toMatchObject({ state: 'running', owner: 'other' });
          continue;
        }
        // BullMQ's HMSET of the job's fields, with the acknowledgement's time (finishedOn).
        expect(writes.map((a) => a[0]?.toLowerCase())).toEqual(['hmset']);
        const finishedOn = String(await redis.hget(keyOf(i), 'finishedOn'));
        expect((await redis.hget(keyOf(i), 'tw')) ?? '').toMatch(new RegExp(`^d\\|[^|]+\\|${finishedOn}\\|1\\|.*"i":${i}`));
      }
      await waitFor(async () => (await unclaimed('af.together')) === before + 1, { timeoutMs: 5_000, what: 'the refused completion counted' });
    } finally {
      monitor.stop();
      await queue.close();
    }
  });

  it('of a run claimed once rides in its acknowledgement too, its steps deleted; one claimed twice goes again and is recorded', async () => {
    gatherAgain();
    const lua: string[][] = [];
    const monitor = await monitorRedis(server, ({ args, source }) => source === 'lua' && lua.push(args));
    const queue = new Queue('af', { connection: server.client(), prefix: 'tw' });
    try {
      const jobs = await queue.addBulk(Array.from({ length: TOGETHER }, (_, i) => ({ name: 'af.step-together', data: { i } })));
      const retried = await queue.add('af.step-retried', {}, { attempts: 2 });
      await drain(TOGETHER + 1, TOGETHER);
      for (const job of jobs) {
        const jobKey = jobRecordKey('tw', 'af', String(job.id));
        expect(await job.getState()).toBe('completed');
        expect(await redis.get(`af:count:${job.data.i}`)).toBe('1');
        const writes = lua.filter((a) => a[1] === jobKey && /^(hmset|hset)$/i.test(a[0] ?? '') && a[2] === 'tw').map((a) => a[0]?.toLowerCase());
        expect(writes).toEqual(['hmset']); // BullMQ's, replacing the running record its step's claim made (HSETNX)
        const finishedOn = String(await redis.hget(jobKey, 'finishedOn'));
        expect((await redis.hget(jobKey, 'tw')) ?? '').toMatch(new RegExp(`^d\\|[^|]+\\|${finishedOn}\\|1\\|.*"i":${job.data.i}`));
        expect(await redis.exists(eo.ledger.stepsKeyOf(`af.step-together#${job.id}`))).toBe(0);
      }
      const retriedKey = jobRecordKey('tw', 'af', String(retried.id));
      expect(await queue.getJobState(String(retried.id))).toBe('completed');
      expect(await redis.get('af:count:retried')).toBe('1'); // the retry resumed past the recorded step
      expect((await redis.hget(retriedKey, 'tw')) ?? '').toMatch(/^d\|[^|]+\|\d+\|2\|.*"second"/);
      expect(await redis.exists(eo.ledger.stepsKeyOf(`af.step-retried#${retried.id}`))).toBe(0);
    } finally {
      monitor.stop();
      await queue.close();
    }
  });

  it('refused there (another delivery holds the run) is counted, and the job is still acknowledged', async () => {
    const queue = new Queue('af', { connection: server.client(), prefix: 'tw' });
    try {
      const job = await queue.add('af.noop', { i: 7 });
      const place = { kind: 'job', jobKey: jobRecordKey('tw', 'af', String(job.id)) } as const;
      expect((await eo.ledger.claim(`af.noop#${job.id}`, place, 'other')).kind).toBe('claimed');
      const before = await unclaimed();
      await drain(1);
      await waitFor(async () => (await unclaimed()) === before + 1, { timeoutMs: 5_000, what: 'the refused completion counted' });
      expect(await eo.ledger.inspect(`af.noop#${job.id}`, place)).toMatchObject({ state: 'running', owner: 'other' });
      expect(await queue.getJobState(String(job.id))).toBe('completed');
    } finally {
      await queue.close();
    }
  });

  it('is written anyway when BullMQ does not acknowledge the job in the same turn', async () => {
    const queue = new Queue('af', { connection: server.client(), prefix: 'tw' });
    const worker = new Worker('af', null, { connection: server.client(), prefix: 'tw' });
    try {
      const job = await queue.add('af.noop', { i: 9 });
      const conn = await ackConnectionOf(worker);
      if (!conn) throw new Error('no connection');
      expect(foldAcks(conn)).toBe(true);
      const jobKey = jobRecordKey('tw', 'af', String(job.id));
      const outcomes: unknown[] = [];
      // As recordUnclaimed sends it: mode, owner, encoded result; no moveToFinished follows.
      await completionWriter(conn).complete(jobKey, ['j', 'me', JSON.stringify({ i: 9 })], (r) => outcomes.push(r), 'completeUnclaimed');
      await waitFor(async () => outcomes.length === 1, { timeoutMs: 5_000, what: 'the completion written' });
      expect(outcomes).toEqual([1]);
      expect(await redis.hget(jobKey, 'tw')).toMatch(/^d\|me\|\d+\|1\|/);
    } finally {
      await worker.close();
      await queue.close();
    }
  });
});
