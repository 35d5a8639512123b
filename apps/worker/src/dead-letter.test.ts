import { createServer, type Server } from 'node:http';
import { createAlerter, listDeadLetters, redriveDeadLetters, type DeadLetter } from '@tickwork/operations';
import { createCatalog, createEnqueue, defineJob, dlqName, QueueSet, SCHEDULED_RUN_OPTION } from '@tickwork/core';
import { occurrenceJobId } from '@tickwork/schedules';
import { startRedisServer, waitFor, type RedisServerHandle } from '@tickwork/testkit';
import { UnrecoverableError, Worker, type JobsOptions } from 'bullmq';
import type { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { listDlqItems, moveToDeadLetter } from '@tickwork/operations';
import { metricsRegistry } from '@tickwork/core';
import { z } from 'zod';
import { createDeadLetterRouting, type DeadLetterRouting } from './dead-letter.js';
import { captureLogger } from './testing/capture-logger.js';
import { startWorkerPool, type WorkerPool } from './worker-pool.js';

vi.setConfig({ testTimeout: 60_000, hookTimeout: 60_000 });

const Q = 'dlqt';
const BROKEN = 'test:broken';
const RUNS = 'test:runs';
const fast = { attempts: 1 };

const poison = defineJob({
  name: 't.poison',
  queue: Q,
  schema: z.object({ n: z.number() }),
  retry: { attempts: 3, backoff: { type: 'fixed', delayMs: 20 } },
  handler: async () => {
    throw new Error('poison pill');
  },
});
const unrecoverable = defineJob({
  name: 't.unrecoverable',
  queue: Q,
  schema: z.object({}),
  retry: { attempts: 5 },
  handler: async () => {
    throw new UnrecoverableError('card permanently declined');
  },
});
const strict = defineJob({
  name: 't.strict',
  queue: Q,
  schema: z.object({ email: z.email(), count: z.number().int() }),
  retry: { attempts: 5 },
  handler: async () => 'ok',
});
const throwsString = defineJob({
  name: 't.throws-string',
  queue: Q,
  schema: z.object({}),
  retry: fast,
  handler: async () => {
    // eslint-disable-next-line @typescript-eslint/only-throw-error -- the point of the test
    throw 'upstream said no';
  },
});
const throwsNull = defineJob({
  name: 't.throws-null',
  queue: Q,
  schema: z.object({}),
  retry: fast,
  handler: async () => {
    // eslint-disable-next-line @typescript-eslint/only-throw-error -- the point of the test
    throw null;
  },
});
const hangs = defineJob({
  name: 't.hangs',
  queue: Q,
  schema: z.object({}),
  retry: fast,
  timeoutMs: 300,
  handler: () => new Promise(() => undefined),
});
/** Fails while the BROKEN flag is set ("the bug"); records each run's identity. */
const RQ = 'dlqt-redrive';
const fixable = defineJob({
  name: 't.fixable',
  queue: RQ,
  schema: z.object({ order: z.string() }),
  retry: { attempts: 2, backoff: { type: 'fixed', delayMs: 20 } },
  async handler(ctx) {
    await ctx.redis.rpush(RUNS, JSON.stringify({ jobId: ctx.jobId, key: ctx.idempotencyKey, nominal: ctx.nominalTime?.toISOString() ?? null }));
    if (await ctx.redis.get(BROKEN)) throw new Error(`order ${ctx.data.order}: downstream broken`);
    return 'done';
  },
});
/** On its own queue, so the stall test controls who takes it. */
const SQ = 'dlqt-stall';
const slow = defineJob({
  name: 't.slow',
  queue: SQ,
  schema: z.object({}),
  retry: fast,
  handler: (ctx) => new Promise((resolve) => ctx.signal.addEventListener('abort', resolve, { once: true })),
});

/** A schedule whose runs fail while BROKEN is set. */
const EQ = 'dlqt-sched';
const nightly = defineJob({
  name: 't.nightly',
  queue: EQ,
  schema: z.object({}),
  retry: fast,
  // The test enqueues five occurrences at once; 'allow' lets them all run instead of skipping overlaps.
  schedule: { every: { hours: 24 }, tz: 'UTC', overlap: 'allow' },
  async handler(ctx) {
    await ctx.redis.rpush(RUNS, JSON.stringify({ jobId: ctx.jobId, key: ctx.idempotencyKey, nominal: ctx.nominalTime?.toISOString() ?? null }));
    if (await ctx.redis.get(BROKEN)) throw new Error('nightly export: bucket missing');
    return 'exported';
  },
});

const cancelLike = defineJob({
  name: 't.cancel-like',
  queue: Q,
  schema: z.object({}),
  retry: fast,
  handler: async () => {
    throw new Error('cancelled by the upstream API: quota exceeded');
  },
});

const catalog = createCatalog([poison, unrecoverable, strict, throwsString, throwsNull, hangs, fixable, slow, nightly, cancelLike]);

let redisServer: RedisServerHandle;
let redis: Redis;
let queues: QueueSet;
let pool: WorkerPool;
let routing: DeadLetterRouting;
let hook: Server;
const hookBodies: Record<string, unknown>[] = [];
const captured = captureLogger();

async function entryFor(jobId: string): Promise<DeadLetter> {
  return waitFor(async () => (await listDeadLetters(queues, Q)).find((d) => d.entry.originalJobId === jobId), {
    timeoutMs: 20_000,
    what: `DLQ entry for ${jobId}`,
  });
}

async function entryIn(queue: string, pred: (d: DeadLetter) => boolean, what: string): Promise<DeadLetter> {
  return waitFor(async () => (await listDeadLetters(queues, queue)).find(pred), { timeoutMs: 20_000, what });
}

async function runs(): Promise<{ jobId: string; key: string; nominal: string | null }[]> {
  return (await redis.lrange(RUNS, 0, -1)).map((r) => JSON.parse(r) as { jobId: string; key: string; nominal: string | null });
}

async function completed(queue: string, jobId: string): Promise<void> {
  await waitFor(async () => (await (await queues.get(queue).getJob(jobId))?.getState()) === 'completed', { what: `${jobId} completed` });
}

async function addRaw(name: string, data: unknown, jobId: string, attempts = 3) {
  await queues.get(Q).add(name, data, { jobId, attempts, backoff: { type: 'fixed', delay: 10 } });
}

beforeAll(async () => {
  redisServer = await startRedisServer();
  redis = redisServer.client();
  hook = createServer((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString()));
    req.on('end', () => {
      hookBodies.push(JSON.parse(body) as Record<string, unknown>);
      res.writeHead(204).end();
    });
  });
  await new Promise<void>((r) => hook.listen(0, '127.0.0.1', r));
  const port = (hook.address() as { port: number }).port;
  const log = captured.log;
  queues = new QueueSet(redis, 'tw', log);
  const alerter = createAlerter({ log, redis, prefix: 'tw', webhook: { url: `http://127.0.0.1:${port}/hooks/SECRET-TOKEN`, backoffMs: 20 } });
  routing = createDeadLetterRouting({ queues, redis, catalog, log, alerter, sweepIntervalMs: 60_000 });
  pool = startWorkerPool({
    catalog,
    redis,
    log,
    enqueue: createEnqueue(catalog, queues),
    redisTarget: redisServer.url,
    prefix: 'tw',
    concurrency: 5,
    deadLetter: routing,
    queues: [Q, RQ, EQ],
  });
});

afterAll(async () => {
  await pool?.drain(2000);
  await queues?.close();
  hook?.close();
  await redisServer?.stop();
});

function expectCommon(d: DeadLetter, jobId: string, name: string) {
  expect(d.dlqQueue).toBe(dlqName(Q));
  expect(d.entry.originQueue).toBe(Q);
  expect(d.entry.jobName).toBe(name);
  expect(d.entry.originalJobId).toBe(jobId);
  expect(Date.parse(d.entry.firstFailedAt)).toBeLessThanOrEqual(Date.parse(d.entry.lastFailedAt));
  expect(Date.parse(d.entry.lastFailedAt)).toBeLessThanOrEqual(Date.parse(d.entry.deadLetteredAt));
  expect(d.entry.nominalTime).toBeNull();
  expect(d.entry.history).toEqual([]);
}

async function expectGoneFromFailedSet(jobId: string) {
  await waitFor(async () => (await queues.get(Q).getJob(jobId)) === undefined, { what: `${jobId} removed from ${Q}` });
}

describe('routing final failures to the DLQ', () => {
  it('attempts exhausted: all attempts made, reason and stack of the last, first failure before the last', async () => {
    await createEnqueue(catalog, queues)(poison, { n: 7 }, { jobId: 'exhausted-1' });
    const d = await entryFor('exhausted-1');
    expectCommon(d, 'exhausted-1', 't.poison');
    expect(d.entry.payload).toEqual({ n: 7 });
    expect(d.entry.attemptsMade).toBe(3);
    expect(d.entry.failureReason).toBe('poison pill');
    expect(d.entry.stack).toMatch(/^Error: poison pill\n\s+at /);
    expect(d.entry.originalOptions).toMatchObject({ attempts: 3, backoff: { type: 'fixed', delay: 20 } });
    expect(d.entry.idempotencyKey).toBe('t.poison#exhausted-1');
    expect(Date.parse(d.entry.firstFailedAt)).toBeLessThan(Date.parse(d.entry.lastFailedAt));
    await expectGoneFromFailedSet('exhausted-1');
  });

  it('UnrecoverableError: one attempt although five were allowed', async () => {
    await addRaw('t.unrecoverable', {}, 'unrecoverable-1', 5);
    const d = await entryFor('unrecoverable-1');
    expectCommon(d, 'unrecoverable-1', 't.unrecoverable');
    expect(d.entry.attemptsMade).toBe(1);
    expect(d.entry.failureReason).toBe('card permanently declined');
    expect(d.entry.stack).toContain('UnrecoverableError: card permanently declined');
  });

  it('invalid payload from an older producer: straight to the DLQ, reason names each bad field', async () => {
    await addRaw('t.strict', { email: 'not-an-email', count: 1.5 }, 'invalid-1', 5);
    const d = await entryFor('invalid-1');
    expectCommon(d, 'invalid-1', 't.strict');
    expect(d.entry.attemptsMade).toBe(1);
    expect(d.entry.failureReason).toMatch(/^invalid payload: /);
    expect(d.entry.failureReason).toContain('email:');
    expect(d.entry.failureReason).toContain('count:');
    expect(d.entry.payload).toEqual({ email: 'not-an-email', count: 1.5 });
  });

  it('unknown job name: reason "unknown job", no retries', async () => {
    await addRaw('t.removed-from-catalog', { a: 1 }, 'unknown-1', 5);
    const d = await entryFor('unknown-1');
    expectCommon(d, 'unknown-1', 't.removed-from-catalog');
    expect(d.entry.failureReason).toBe('unknown job');
    expect(d.entry.attemptsMade).toBe(1);
    expect(d.entry.idempotencyKey).toBe('t.removed-from-catalog#unknown-1');
  });

  it("a handler's own error that reads like a cancellation is still dead-lettered, its reason marked as the handler's", async () => {
    await addRaw('t.cancel-like', {}, 'cancel-like-1', 1);
    const d = await entryFor('cancel-like-1');
    expect(d.entry.failureReason).toBe('handler error: cancelled by the upstream API: quota exceeded');
  });

  it('a handler that throws a string: the string is the reason, with a stack', async () => {
    await addRaw('t.throws-string', {}, 'string-1', 1);
    const d = await entryFor('string-1');
    expect(d.entry.failureReason).toBe('upstream said no');
    expect(d.entry.stack).toContain('NonErrorThrownError: upstream said no');
  });

  it('a handler that throws null: a readable reason instead of a stalled job', async () => {
    await addRaw('t.throws-null', {}, 'null-1', 1);
    const d = await entryFor('null-1');
    expect(d.entry.failureReason).toBe('handler threw null instead of an Error');
    expect(d.entry.stack).toContain('NonErrorThrownError');
  });

  it('a handler that hangs: fails at its timeout with a timeout reason', async () => {
    await addRaw('t.hangs', {}, 'hang-1', 1);
    const d = await entryFor('hang-1');
    expect(d.entry.failureReason).toBe('job "t.hangs" timed out after 300 ms; raise timeoutMs in its defineJob if this is expected');
    expect(d.entry.stack).toContain('JobTimeoutError');
  });

  it('stalled more often than allowed: dead-lettered with the stall reason', async () => {
    // A "worker" takes the job and never renews its lock, as a process frozen or killed mid-job would.
    const thief = new Worker(SQ, null, { connection: redisServer.client(), prefix: 'tw', lockDuration: 300 });
    await queues.get(SQ).add('t.slow', {}, { jobId: 'stalled-1', attempts: 3 });
    const taken = await waitFor(() => thief.getNextJob('thief-token'), { what: 'the thief takes the job' });
    expect(taken.id).toBe('stalled-1');
    // A real worker's stall check finds the lock expired; past maxStalledCount the job fails on its next pick-up.
    const rescuer = startWorkerPool({
      catalog,
      redis,
      log: captured.log,
      enqueue: createEnqueue(catalog, queues),
      redisTarget: redisServer.url,
      prefix: 'tw',
      concurrency: 1,
      deadLetter: createDeadLetterRouting({ queues, redis, catalog, log: captured.log, alerter: createAlerter({ log: captured.log, redis, prefix: 'tw' }), sweepIntervalMs: 60_000 }),
      queues: [SQ],
      stalledIntervalMs: 200,
      maxStalledCount: 0,
    });
    try {
      const d = await waitFor(async () => (await listDeadLetters(queues, SQ)).find((x) => x.entry.originalJobId === 'stalled-1'), {
        timeoutMs: 20_000,
        what: 'stalled job dead-lettered',
      });
      expect(d.dlqQueue).toBe(dlqName(SQ));
      expect(d.entry.jobName).toBe('t.slow');
      expect(d.entry.failureReason).toBe('job stalled more than allowable limit');
      expect(d.entry.attemptsMade).toBe(1);
    } finally {
      await thief.close();
      await rescuer.drain(2000);
    }
  });
});

describe('re-drive', () => {
  it('re-drives one entry: same idempotency key, fresh attempts; fails again with history; completes once fixed', async () => {
    await redis.set(BROKEN, '1');
    await createEnqueue(catalog, queues)(fixable, { order: 'A' }, { jobId: 'order-a' });
    const first = await entryIn(RQ, (d) => d.entry.originalJobId === 'order-a', 'order-a dead-lettered');
    expect(first.entry.attemptsMade).toBe(2);
    expect(first.entry.idempotencyKey).toBe('t.fixable#order-a');

    // Still broken: the re-driven job fails again and comes back with the first failure in its history.
    const [again] = await redriveDeadLetters({ queues, queue: RQ, selector: { ids: [first.dlqJobId] }, catalog });
    expect(again).toMatchObject({ dlqJobId: first.dlqJobId, redriven: true, idempotencyKey: 't.fixable#order-a' });
    const second = await entryIn(RQ, (d) => d.entry.originalJobId === again?.newJobId, 're-driven job dead-lettered again');
    expect(second.entry.redriveCount).toBe(1);
    expect(second.entry.attemptsMade).toBe(2);
    expect(second.entry.idempotencyKey).toBe('t.fixable#order-a');
    expect(second.entry.rootDlqJobId).toBe(first.dlqJobId);
    expect(second.entry.history).toHaveLength(1);
    expect(second.entry.history[0]).toMatchObject({
      jobId: 'order-a',
      failureReason: 'order A: downstream broken',
      attemptsMade: 2,
      firstFailedAt: first.entry.firstFailedAt,
      lastFailedAt: first.entry.lastFailedAt,
    });
    expect((await listDeadLetters(queues, RQ)).map((d) => d.dlqJobId)).not.toContain(first.dlqJobId);

    // Fixed: the second re-drive completes, still under the original key.
    await redis.del(BROKEN);
    const [done] = await redriveDeadLetters({ queues, queue: RQ, selector: { ids: [second.dlqJobId] }, catalog });
    expect(done?.newJobId).not.toBe(again?.newJobId);
    await completed(RQ, done?.newJobId ?? '');
    expect((await listDeadLetters(queues, RQ)).filter((d) => d.entry.idempotencyKey === 't.fixable#order-a')).toEqual([]);
    const keys = (await runs()).filter((r) => r.key === 't.fixable#order-a');
    expect(keys.map((r) => r.jobId)).toEqual(['order-a', 'order-a', again?.newJobId, again?.newJobId, done?.newJobId]);
  });

  it('dry run changes nothing; re-drive --all re-enqueues every entry and empties the DLQ', async () => {
    await redis.set(BROKEN, '1');
    const enqueue = createEnqueue(catalog, queues);
    for (const order of ['B', 'C', 'D']) await enqueue(fixable, { order }, { jobId: `order-${order.toLowerCase()}` });
    await waitFor(async () => (await listDeadLetters(queues, RQ)).length === 3, { timeoutMs: 20_000, what: '3 entries' });
    await redis.del(BROKEN);

    const dry = await redriveDeadLetters({ queues, queue: RQ, selector: { items: await listDlqItems(queues, RQ) }, dryRun: true });
    expect(dry.map((o) => o.redriven)).toEqual([false, false, false]);
    expect(await listDeadLetters(queues, RQ)).toHaveLength(3);

    const all = await redriveDeadLetters({ queues, queue: RQ, selector: { items: await listDlqItems(queues, RQ) }, catalog });
    expect(all).toHaveLength(3);
    for (const o of all) await completed(RQ, o.newJobId);
    expect(await listDeadLetters(queues, RQ)).toEqual([]);
  });

  it('re-driving an entry twice (a crash before the entry was removed) enqueues it once', async () => {
    await redis.set(BROKEN, '1');
    await createEnqueue(catalog, queues)(fixable, { order: 'E' }, { jobId: 'order-e' });
    const d = await entryIn(RQ, (x) => x.entry.originalJobId === 'order-e', 'order-e dead-lettered');
    await redis.del(BROKEN);
    // Simulate the crash: the entry is put back on the DLQ after the re-drive enqueued the job.
    const [o] = await redriveDeadLetters({ queues, queue: RQ, selector: { ids: [d.dlqJobId] }, catalog });
    await completed(RQ, o?.newJobId ?? '');
    await queues.get(dlqName(RQ)).add(d.entry.jobName, d.entry, { jobId: d.dlqJobId });
    const [o2] = await redriveDeadLetters({ queues, queue: RQ, selector: { ids: [d.dlqJobId] }, catalog });
    expect(o2?.newJobId).toBe(o?.newJobId);
    expect((await runs()).filter((r) => r.jobId === o?.newJobId)).toHaveLength(1);
    expect(await listDeadLetters(queues, RQ)).toEqual([]);
  });
});

describe('crash safety of the move', () => {
  it('a failure whose failed event was lost is swept into the DLQ; repeated moves make one entry and one alert', async () => {
    // A bare worker (on a queue the pool does not serve) plays a process that died right after BullMQ
    // failed the job, before its failed event could move it.
    const LQ = 'dlqt-lost';
    const bare = new Worker(LQ, null, { connection: redisServer.client(), prefix: 'tw' });
    await queues.get(LQ).add('t.poison', { n: 1 }, { jobId: 'lost-event-1', attempts: 1 });
    const job = await waitFor(() => bare.getNextJob('bare-token'), { what: 'bare worker takes the job' });
    await job.moveToFailed(new Error('died before the move'), 'bare-token');
    expect(await (await queues.get(LQ).getJob('lost-event-1'))?.getState()).toBe('failed');
    // Two processes' sweeps race for it, as after a restart of several workers.
    const other = createDeadLetterRouting({ queues, redis, catalog, log: captured.log, alerter: createAlerter({ log: captured.log, redis, prefix: 'tw' }), sweepIntervalMs: 60_000 });
    const failedJob = await queues.get(LQ).getJob('lost-event-1');
    routing.attach(bare);
    other.attach(bare);
    const [a, b] = await Promise.all([routing.sweep(), other.sweep()]);
    await other.close();
    expect(a + b).toBeGreaterThanOrEqual(1);
    const entries = (await listDeadLetters(queues, LQ)).filter((d) => d.entry.originalJobId === 'lost-event-1');
    expect(entries).toHaveLength(1);
    expect(entries[0]?.entry.failureReason).toBe('died before the move');
    expect(await queues.get(LQ).getJob('lost-event-1')).toBeUndefined();
    const again = await moveToDeadLetter({ job: failedJob!, queues, redis, catalog });
    expect(again).toBeUndefined();
    await waitFor(() => captured.entries().filter((e) => e.msg === 'alert' && (e.alert as { jobId?: string }).jobId === 'lost-event-1').length === 1, {
      what: 'one alert for lost-event-1',
    });
    await bare.close();
  });
});

describe('alerts', () => {
  it('each entry logs an alert line, counts, and posts the webhook; the webhook token never reaches the logs', async () => {
    await waitFor(() => hookBodies.some((b) => b.jobId === 'exhausted-1'), { what: 'webhook for exhausted-1' });
    const body = hookBodies.find((b) => b.jobId === 'exhausted-1');
    expect(body).toMatchObject({ type: 'dead_letter', queue: Q, job: 't.poison', reason: 'poison pill', attemptsMade: 3 });
    const line = captured.entries().find((e) => e.msg === 'alert' && (e.alert as { jobId?: string }).jobId === 'exhausted-1');
    expect(line?.level).toBe(50);
    const metrics = await metricsRegistry.metrics();
    expect(metrics).toMatch(/tickwork_dead_lettered_total\{queue="dlqt",job="t.poison"\} [1-9]/);
    expect(metrics).toMatch(/tickwork_alerts_total\{type="dead_letter"\} [1-9]/);
    expect(captured.lines.join('\n')).not.toContain('SECRET-TOKEN');
  });

  it('a schedule failing 3 runs in a row sends one escalation, not one per run; entries keep the nominal time; re-drive keeps it', async () => {
    await redis.set(BROKEN, '1');
    const queue = queues.get(EQ);
    // Occurrences as the tickwork scheduler enqueues them: deterministic ids and the occurrence option.
    const base = Date.UTC(2030, 0, 1);
    const occurrence = (i: number) => {
      const nominal = base + i * 86_400_000;
      return queue.add('t.nightly', {}, {
        jobId: occurrenceJobId('t.nightly', new Date(nominal)),
        attempts: 1,
        [SCHEDULED_RUN_OPTION]: { schedule: 't.nightly', nominal, catchUp: false },
      } as JobsOptions);
    };
    for (let i = 0; i < 5; i++) await occurrence(i);
    await waitFor(async () => (await listDeadLetters(queues, EQ)).length >= 5, { timeoutMs: 30_000, what: '5 failed runs' });
    const entries = await listDeadLetters(queues, EQ);
    for (const d of entries) {
      expect(d.entry.scheduleId).toBe('t.nightly');
      expect(d.entry.nominalTime).not.toBeNull();
      expect(d.entry.idempotencyKey).toBe(`t.nightly@${d.entry.nominalTime}`);
      expect(d.entry.originalJobId).toBe(occurrenceJobId('t.nightly', new Date(d.entry.nominalTime ?? '')));
      expect(d.dlqJobId).not.toContain(':');
    }
    // A run's escalation is decided after its dead-letter alert and two round trips (the count's INCR and
    // PEXPIRE), so later runs' webhooks can come first: wait for every run's webhook and every run counted.
    const counter = 'tw:meta:consecutive-failures:dlqt-sched:t.nightly';
    await waitFor(() => hookBodies.filter((b) => b.type === 'dead_letter' && b.queue === EQ).length >= 5 && hookBodies.some((b) => b.type === 'escalation'), { what: 'per-run webhooks and the escalation' });
    await waitFor(async () => Number(await redis.get(counter)) >= 5, { what: 'every run counted' });
    const escalations = hookBodies.filter((b) => b.type === 'escalation');
    expect(escalations).toHaveLength(1);
    expect(escalations[0]).toMatchObject({ scheduleId: 't.nightly', consecutiveFailures: 3, lastReason: 'nightly export: bucket missing' });
    expect(captured.entries().filter((e) => e.msg === 'alert' && (e.alert as { type?: string }).type === 'escalation')).toHaveLength(1);

    // Fixed: re-drive one run; it runs with its original nominal time and key; a successful scheduled run resets the count.
    await redis.del(BROKEN);
    const target = entries[0]!;
    const [o] = await redriveDeadLetters({ queues, queue: EQ, selector: { ids: [target.dlqJobId] }, catalog });
    await completed(EQ, o?.newJobId ?? '');
    const run = (await runs()).find((r) => r.jobId === o?.newJobId);
    expect(run).toEqual({ jobId: o?.newJobId, key: target.entry.idempotencyKey, nominal: target.entry.nominalTime });
    expect(Number(await redis.get(counter))).toBeGreaterThanOrEqual(5);
    await occurrence(5);
    await waitFor(async () => (await redis.exists(counter)) === 0, { what: 'count reset by a successful run' });
  });
});
