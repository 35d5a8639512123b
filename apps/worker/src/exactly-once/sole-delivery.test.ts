/**
 * A sole delivery (recovery/sole-delivery.ts): a job's first delivery that provably meets no other runs its
 * `ctx.step` without claiming first; the claim rides with the record, in BullMQ's acknowledgement. What a
 * user relies on: the step's effect happens once and the run is recorded done with its result, with one
 * ledger write per job; a job whose hash already holds a run record (an operator's retry of a finished run
 * with its counters reset) is not sole, so its step is not run again; a delivery stops counting as sole
 * once its lock's first half has passed or its process's liveness is in doubt.
 */
import { createCatalog, defineJob } from '@tickwork/core';
import { createExactlyOnce, JOB_RECORD_FIELD, jobRecordKey, type ExactlyOnce } from '@tickwork/exactly-once';
import { monitorRedis, startRedisServer, waitFor, type RedisServerHandle } from '@tickwork/testkit';
import { Queue, type Job, type Worker } from 'bullmq';
import type { Redis } from 'ioredis';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { createProcessor } from '../processor.js';
import { soleDeliveryCheck } from '../recovery/sole-delivery.js';
import { createEngine } from '@tickwork/bullmq-engine';
import { TickworkWorker } from '@tickwork/bullmq-engine/testing';

let server: RedisServerHandle;
let redis: Redis;
let eo: ExactlyOnce;
let queue: Queue;
/** The worker's engine on its fast path, as worker-pool.ts makes it. */
const engine = createEngine({ log: pino({ level: 'silent' }) });

const silent = pino({ level: 'silent' });
const effects = (jobId: string) => `sd:effects:${jobId}`;

const charge = defineJob({
  name: 'sd.charge',
  queue: 'sd',
  schema: z.object({}),
  handler: async (ctx) => ({ charged: await ctx.step('charge', () => ctx.redis.incr(effects(ctx.jobId))) }),
});
/** No steps: its run is never claimed, its record goes with its acknowledgement. */
const noop = defineJob({ name: 'sd.noop', queue: 'sd', schema: z.object({}), handler: async (ctx) => ({ ran: ctx.jobId }) });
const catalog = createCatalog([charge, noop]);

beforeAll(async () => {
  server = await startRedisServer();
  redis = server.client();
  eo = createExactlyOnce(redis, { prefix: 'tw', leaseMs: 60_000 });
  queue = new Queue('sd', { connection: server.client(), prefix: 'tw' });
  await queue.waitUntilReady();
});
afterAll(async () => {
  await queue.close();
  await server.stop();
});

/** The stock processor on a TickworkWorker, as worker-pool.ts runs it (without recovery); resolves once `count` jobs completed. */
async function drain(count: number, soleDelivery = soleDeliveryCheck({ lockDurationMs: 30_000, unrecordedAtDelivery: engine.unrecordedAtDelivery })): Promise<void> {
  let done = 0;
  const processor = createProcessor({ catalog, redis, log: silent, exactlyOnce: eo, enqueue: async () => ({ id: 'unused' }), soleDelivery, ackConnectionOf: () => (engine.ackConnectionOf as NonNullable<typeof engine.ackConnectionOf>)(worker) });
  const worker: Worker = new TickworkWorker('sd', processor, { connection: server.client(), prefix: 'tw', concurrency: 1 });
  worker.on('completed', () => done++);
  try {
    await waitFor(async () => done === count, { timeoutMs: 15_000, what: `${count} jobs completed` });
  } finally {
    await worker.close();
  }
}

describe('a sole delivery', () => {
  it("runs its step before any ledger write, and its claim, record and result ride in the job's acknowledgement", async () => {
    const seen: string[][] = [];
    const monitor = await monitorRedis(server, ({ args, source }) => source !== 'lua' && seen.push(args));
    const jobs = await queue.addBulk(Array.from({ length: 10 }, () => ({ name: 'sd.charge', data: {} })));
    try {
      await drain(jobs.length);
    } finally {
      monitor.stop();
    }
    for (const job of jobs) {
      const id = String(job.id);
      const jobKey = jobRecordKey('tw', 'sd', id);
      const scripts = seen.filter((a) => /^eval(sha)?$/i.test(a[0] ?? '') && a.includes(jobKey));
      const effectAt = seen.findIndex((a) => a[0]?.toLowerCase() === 'incr' && a[1] === effects(id));
      // One script names the job's key: its acknowledgement, carrying the completion; it comes after the effect.
      expect({ id, scripts: scripts.length, acknowledges: scripts.every((a) => a.includes('tw:sd:completed')) }).toEqual({ id, scripts: 1, acknowledges: true });
      expect(seen.indexOf(scripts[0] as string[])).toBeGreaterThan(effectAt);
      expect(await redis.get(effects(id))).toBe('1');
      expect(await eo.ledger.inspect(`sd.charge#${id}`, { kind: 'job', jobKey })).toMatchObject({ state: 'done', claims: 1, result: { charged: 1 } });
    }
  });

  it("records a run without steps in BullMQ's own acknowledgement script, with no check before it; a delivery not judged sole checks first", async () => {
    const seen: { args: string[]; lua: boolean }[] = [];
    const monitor = await monitorRedis(server, ({ args, source }) => seen.push({ args, lua: source === 'lua' }));
    const add = () => queue.addBulk(Array.from({ length: 5 }, () => ({ name: 'sd.noop', data: {} })));
    let sole: Job[] = [];
    let notSole: Job[] = [];
    try {
      sole = await add();
      await drain(sole.length);
      notSole = await add();
      await drain(notSole.length, soleDeliveryCheck({ lockDurationMs: 0, unrecordedAtDelivery: engine.unrecordedAtDelivery })); // never within its lock's first half
      await redis.ping(); // MONITOR lines arrive in order: this one's shows the drains' have all arrived
      await waitFor(async () => seen.some((c) => !c.lua && c.args[0]?.toLowerCase() === 'ping'), { timeoutMs: 5_000, what: 'the last MONITOR line' });
    } finally {
      monitor.stop();
    }
    for (const [jobs, checks] of [[sole, false], [notSole, true]] as const) {
      let rode = 0;
      for (const job of jobs) {
        const jobKey = jobRecordKey('tw', 'sd', String(job.id));
        const onRecord = seen.filter((c) => c.lua && c.args[1] === jobKey && c.args[2] === JOB_RECORD_FIELD).map((c) => c.args[0]?.toLowerCase());
        // BullMQ's HMSET of the job's fields carries the record (ack-ride.ts); only a delivery not judged sole checks first.
        if (onRecord.includes('hmset')) rode++;
        expect({ id: job.id, checked: onRecord.includes('hexists') }).toEqual({ id: job.id, checked: checks && onRecord.includes('hmset') });
        expect(await eo.ledger.inspect(`sd.noop#${job.id}`, { kind: 'job', jobKey })).toMatchObject({ state: 'done', claims: 1, result: { ran: String(job.id) } });
      }
      // As in ack-fold.test.ts, a drain's first completion may be written ahead on a loaded machine.
      expect(rode).toBeGreaterThanOrEqual(jobs.length - 1);
    }
  });

  it("is not judged sole when the job's hash holds a run record: an operator's retry with counters reset does not charge again", async () => {
    const job = await queue.add('sd.charge', {});
    const id = String(job.id);
    await drain(1);
    expect(await redis.get(effects(id))).toBe('1');
    const done = (await queue.getJob(id)) as Job;
    await done.retry('completed', { resetAttemptsMade: true, resetAttemptsStarted: true });
    await drain(1);
    expect(await redis.get(effects(id))).toBe('1');
    expect(await queue.getJob(id).then((j) => j?.returnvalue)).toEqual({ charged: 1 });
  });
});

describe('soleDeliveryCheck', () => {
  /** Delivers one new job to a TickworkWorker whose processor hands the check's answers to `probe`. */
  async function probeDelivery(probe: (job: Job) => Promise<unknown>): Promise<unknown> {
    const q = new Queue('sd-probe', { connection: server.client(), prefix: 'tw' });
    let answer!: (v: unknown) => void;
    const answered = new Promise((resolve) => (answer = resolve));
    const worker = new TickworkWorker('sd-probe', async (job) => answer(await probe(job)), { connection: server.client(), prefix: 'tw' });
    try {
      await q.add('probe', {});
      return await answered;
    } finally {
      await worker.close();
      await q.obliterate({ force: true });
      await q.close();
    }
  }

  it("is sole for a new job's delivery, and not once its lock's first half has passed", async () => {
    const check = soleDeliveryCheck({ lockDurationMs: 600, unrecordedAtDelivery: engine.unrecordedAtDelivery });
    const answers = await probeDelivery(async (job) => {
      const atStart = check(job);
      await waitFor(async () => Date.now() - (job.processedOn ?? 0) >= 300, { timeoutMs: 5_000, what: "half the lock's term" });
      return { atStart, later: check(job) };
    });
    expect(answers).toEqual({ atStart: true, later: false });
  });

  it('is not sole while recovery is not certain of this process (a late heartbeat, trouble on the connection)', async () => {
    let certain = true;
    const check = soleDeliveryCheck({ lockDurationMs: 30_000, recovery: { certain: () => certain }, unrecordedAtDelivery: engine.unrecordedAtDelivery });
    const answers = await probeDelivery(async (job) => {
      const before = check(job);
      certain = false;
      return { before, after: check(job) };
    });
    expect(answers).toEqual({ before: true, after: false });
  });

  it('is not sole for a job a plain BullMQ Worker delivered (nothing noted what its hash held)', async () => {
    const job = await queue.add('sd.charge', {});
    expect(soleDeliveryCheck({ lockDurationMs: 30_000, unrecordedAtDelivery: engine.unrecordedAtDelivery })((await queue.getJob(String(job.id))) as Job)).toBe(false);
  });
});
