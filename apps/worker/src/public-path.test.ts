/**
 * The worker on BullMQ's public paths only (WORKER_BULLMQ_FAST_PATH=off: a stock Worker, BullMQ's own
 * scripts, results awaited before the processor returns, no reaper) keeps every tickwork guarantee, against
 * real worker processes: it says which way it runs, a poison job ends in its queue's DLQ with its reason, a
 * cancelled job ends cancelled (not retried, not dead-lettered), a duplicate with the same idempotency key
 * runs once, a run killed -9 after its first step resumes in another process without redoing the step
 * (through BullMQ's own stalled check: the only recovery on these paths), and a run killed more often than
 * WORKER_MAX_STALLED_COUNT allows, making progress each time, still completes.
 */
import { fileURLToPath } from 'node:url';
import { createEnqueue, createLogger, dlqName, QueueSet } from '@tickwork/core';
import { IdempotencyLedger } from '@tickwork/exactly-once';
import { cancelRequestsKey, listDeadLetters, requestCancel } from '@tickwork/operations';
import { createCatalogSource, createSchedules, readHistory } from '@tickwork/schedules';
import { freePort, startApp, startRedisServer, waitFor, type AppProcess, type RedisServerHandle } from '@tickwork/testkit';
import type { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CX_KEYS, cxWait } from './testing/cancel-fixtures.js';
import { FX_KEYS } from './testing/exactly-once-fixtures.js';
import { catalog, PP_KEYS, ppPoison, ppProgress, ppResume, ppStuck } from './testing/public-path-fixtures.js';
import { readMetric } from './testing/read-metric.js';

const WORKER = fileURLToPath(new URL('../dist/main.js', import.meta.url));
const JOBS_MODULE = fileURLToPath(new URL('../dist/testing/public-path-fixtures.js', import.meta.url));
const PREFIX = 'tickwork';
const PUBLIC_LINE = "BullMQ engine: BullMQ's public paths only (WORKER_BULLMQ_FAST_PATH=off)";

let server: RedisServerHandle;
let redis: Redis;
let queues: QueueSet;
/** Every worker process started, to stop after the file. */
const started: AppProcess[] = [];
/** The two workers serving the cancel, exactly-once and poison queues. */
let pair: { app: AppProcess; port: number }[] = [];

/** A worker process on BullMQ's public paths, serving `queues`; `env` adds to (or overrides) the rest. */
async function startPublicWorker(queueNames: string, env: Record<string, string> = {}): Promise<{ app: AppProcess; port: number }> {
  const port = await freePort();
  const app = startApp(WORKER, {
    REDIS_URL: server.url,
    JOBS_MODULE,
    PORT: String(port),
    WORKER_QUEUES: queueNames,
    WORKER_CONCURRENCY: '10',
    LOG_LEVEL: 'info',
    WORKER_BULLMQ_FAST_PATH: 'off',
    ...env,
  });
  started.push(app);
  // A start on a busy 2-core machine has taken over 15 s.
  await app.waitForLog((l) => l.msg === 'worker ready', 'worker ready', 45_000);
  return { app, port };
}

beforeAll(async () => {
  server = await startRedisServer();
  redis = server.client();
  queues = new QueueSet(redis, PREFIX, createLogger('test', 'silent'));
  pair = await Promise.all([0, 1].map(() => startPublicWorker('cx,fx,pp')));
}, 120_000);

afterAll(async () => {
  await Promise.all(started.map((a) => a.stop('SIGKILL')));
  await queues?.close();
  await server?.stop();
});

const enqueue = () => createEnqueue(catalog, queues);
/** Runs cx.wait's schedule now, as the dashboard's button does (the schedule stored first, as a scheduler stores it). */
async function runNow(): Promise<string> {
  const log = createLogger('test', 'silent');
  await createCatalogSource({ redis, queues, catalog, log }).put(cxWait);
  return (await createSchedules({ redis, queues, catalog, log }).runNow(cxWait.name, { by: 'test' })).jobId;
}
const events = (key: string) => redis.lrange(key, 0, -1);
const sumMetric = async (name: string, labels: Record<string, string>) =>
  (await Promise.all(pair.map((w) => readMetric(w.port, name, labels)))).reduce((a, b) => a + b, 0);

describe("the worker on BullMQ's public paths only (WORKER_BULLMQ_FAST_PATH=off)", () => {
  it('says so: one log line at start, and tickwork_bullmq_fast_path 0 on /metrics', async () => {
    for (const { app, port } of pair) {
      const lines = app.logs().filter((l) => typeof l.msg === 'string' && l.msg.startsWith('BullMQ engine:'));
      expect(lines.map((l) => l.msg)).toEqual([PUBLIC_LINE]);
      // The series itself, not readMetric's sum: a missing gauge would also read as 0 there.
      const text = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
      expect(text.split('\n').filter((l) => l.startsWith('tickwork_bullmq_fast_path'))).toEqual(['tickwork_bullmq_fast_path 0']);
    }
  });

  it("a job failing on every attempt ends in its queue's DLQ with its reason, after all its attempts", async () => {
    const { id } = await enqueue()(ppPoison, { n: 7 }, { jobId: 'poison-1' });
    const d = await waitFor(async () => (await listDeadLetters(queues, 'pp')).find((x) => x.entry.originalJobId === id), {
      timeoutMs: 30_000,
      what: 'the DLQ entry of poison-1',
    });
    expect(d.dlqQueue).toBe(dlqName('pp'));
    expect(d.entry).toMatchObject({ originQueue: 'pp', jobName: 'pp.poison', payload: { n: 7 }, attemptsMade: 3, failureReason: 'poison pill', idempotencyKey: 'pp.poison#poison-1' });
    expect(d.entry.stack).toMatch(/^Error: poison pill\n\s+at /);
    expect(Date.parse(d.entry.firstFailedAt)).toBeLessThan(Date.parse(d.entry.lastFailedAt));
    // Moved, not copied: gone from the failed set, counted and logged once. The count and the line follow
    // the move (dead-letter.ts), so they are waited for, then counted.
    await waitFor(async () => (await queues.get('pp').getJob(id)) === undefined, { timeoutMs: 30_000, what: 'poison-1 removed from pp' });
    const counted = () => sumMetric('tickwork_dead_lettered_total', { queue: 'pp', job: 'pp.poison' });
    const logged = () => pair.flatMap((w) => w.app.logs()).filter((l) => l.msg === 'job dead-lettered' && l.jobId === id);
    await waitFor(async () => (await counted()) > 0 && logged().length > 0, { timeoutMs: 30_000, what: 'the move counted and logged' });
    expect(await counted()).toBe(1);
    expect(logged()).toHaveLength(1);
  }, 60_000);

  it('a running job cancelled by an operator ends failed as cancelled: not retried, not dead-lettered; a retry resumes it', async () => {
    const id = await runNow(); // a run of cx.wait's schedule, which its history records (an ad-hoc one it does not)
    await waitFor(async () => (await events(CX_KEYS.events)).includes(`step:${id}`), { timeoutMs: 30_000, what: 'the handler to record its step and wait' });

    await requestCancel({ queues, queue: 'cx', jobId: id, by: 'alice', reason: 'wrong customer' });
    // The job read again once failed: one read before the state changed would carry no failure yet.
    await waitFor(async () => (await (await queues.get('cx').getJob(id))?.getState()) === 'failed', { timeoutMs: 30_000, what: 'the job to end' });
    const job = await queues.get('cx').getJob(id);
    expect(await events(CX_KEYS.events)).toContain(`aborted:${id}:JobCancelledError: cancelled by alice: wrong customer`);
    expect(job?.failedReason).toBe('cancelled by alice: wrong customer');
    expect(job?.attemptsMade).toBe(1); // three attempts allowed, one made: not retried
    expect(await queues.get(dlqName('cx')).count()).toBe(0);
    expect(await sumMetric('tickwork_jobs_cancelled_total', { queue: 'cx' })).toBe(1);
    expect(await sumMetric('tickwork_job_attempts_failed_total', { queue: 'cx' })).toBe(0);
    expect(await sumMetric('tickwork_dead_lettered_total', { queue: 'cx' })).toBe(0);
    const [occurrence] = await readHistory(redis, PREFIX, 'cx.wait');
    expect(occurrence).toMatchObject({ outcome: 'cancelled', error: 'cancelled by alice: wrong customer' });
    expect(await redis.hlen(cancelRequestsKey(PREFIX))).toBe(0);

    // The operator's retry runs it again, from its recorded step.
    await redis.set(CX_KEYS.finish, '1');
    await job?.retry('failed');
    await waitFor(async () => (await (await queues.get('cx').getJob(id))?.getState()) === 'completed', { timeoutMs: 30_000, what: 'the retried job to complete' });
    const after = await events(CX_KEYS.events);
    expect(after.filter((e) => e === `step:${id}`)).toHaveLength(1);
    expect(after).toContain(`completed:${id}`);
  }, 90_000);

  it('a job enqueued again with the same idempotency key runs once: ten at once across two processes, then one after it completed', async () => {
    const queue = queues.get('fx');
    // sleepMs: the first run is still in progress while its duplicates are delivered to both processes.
    const jobs = await queue.addBulk(Array.from({ length: 10 }, () => ({ name: 'fx.effect', data: { occurrence: 'pp-dup', sleepMs: 300 } })));
    const completedAll = async (ids: string[]) =>
      waitFor(async () => {
        const states = await Promise.all(ids.map(async (jid) => (await queue.getJob(jid))?.getState()));
        if (states.includes('failed')) throw new Error(`a duplicate failed: ${states.join(',')}`);
        return states.every((s) => s === 'completed');
      }, { timeoutMs: 60_000, what: 'every delivery completed' });
    await completedAll(jobs.map((j) => j.id as string));
    const late = await queue.add('fx.effect', { occurrence: 'pp-dup' });
    await completedAll([late.id as string]);

    expect(await redis.llen(FX_KEYS.effects('pp-dup'))).toBe(1);
    // Every delivery, the late one too, completed with the one recorded result.
    const results = await Promise.all([...jobs, late].map(async (j) => (await queue.getJob(j.id as string))?.returnvalue));
    expect(results).toEqual(Array.from({ length: 11 }, () => ({ effects: 1, key: 'fx.effect@pp-dup' })));
    expect(await sumMetric('tickwork_duplicates_suppressed_total', { job: 'fx.effect' })).toBe(10);
  }, 90_000);

  it('a run killed -9 after its first step resumes in another process without redoing the step', async () => {
    // Short lock: BullMQ's stalled check, the only recovery on these paths, hands the run on about a
    // second after the kill (as redis-step-crash.test.ts sets). Workers of their own, so the test knows
    // which process holds the run: the first alone until the run has recorded its step.
    const short = { WORKER_LOCK_DURATION_MS: '1000', WORKER_STALLED_INTERVAL_MS: '500' };
    const first = await startPublicWorker('ppresume', short);
    const { id } = await enqueue()(ppResume, { n: 1 });
    const firstPid = first.app.proc.pid;
    await waitFor(async () => (await events(PP_KEYS.events)).includes(`first:${id}:${firstPid}`), { timeoutMs: 30_000, what: 'the first step, in the first process' });
    const second = await startPublicWorker('ppresume', short);
    // Released before the kill: the first process is past its check and waits, so only a new delivery sees it.
    await redis.set(PP_KEYS.release, '1');
    await first.app.stop('SIGKILL');

    await waitFor(async () => (await (await queues.get('ppresume').getJob(id))?.getState()) === 'completed', {
      timeoutMs: 60_000,
      what: 'the run to complete in the second process',
    });
    const secondPid = second.app.proc.pid;
    expect((await queues.get('ppresume').getJob(id))?.returnvalue).toEqual({ completedBy: secondPid });
    // Started twice, once per process; its step ran once, in the first.
    const ofRun = (await events(PP_KEYS.events)).filter((e) => e.includes(`:${id}:`));
    expect(ofRun).toEqual([`started:${id}:${firstPid}`, `first:${id}:${firstPid}`, `started:${id}:${secondPid}`, `completed:${id}:${secondPid}`]);
    expect(await queues.get(dlqName('ppresume')).count()).toBe(0);
  }, 120_000);

  it('a run killed -9 three times, recording new steps each time, completes instead of being dead-lettered as stalled', async () => {
    // docs/dead-letters.md, "Stalls and progress": a delivery that records a new step starts the job's
    // stall count again, so a run that moves forward through a crash loop completes. WORKER_MAX_STALLED_COUNT
    // is left at its default (2): three stalls are one more than it allows, but each after progress.
    const short = { WORKER_LOCK_DURATION_MS: '1000', WORKER_STALLED_INTERVAL_MS: '500' };
    const { id } = await enqueue()(ppProgress, { steps: 12, pauseMs: 250 });
    // Steps *recorded* (the ledger's steps hash), not effects seen: a kill between a ctx.step's effect and its
    // record repeats that step by design (docs/exactly-once.md), and this test holds recorded steps to once.
    const stepsKey = new IdempotencyLedger(redis, { prefix: 'tickwork' }).stepsKeyOf(`${ppProgress.name}#${id}`);
    const stepsRecorded = () => redis.hlen(stepsKey);
    // One worker at a time, so each kill lands on the delivery in progress.
    for (const atLeast of [2, 4, 6]) {
      const w = await startPublicWorker('ppprogress', short);
      await waitFor(async () => (await stepsRecorded()) >= atLeast, { timeoutMs: 90_000, what: `${atLeast} steps recorded` });
      await w.app.stop('SIGKILL');
    }
    await startPublicWorker('ppprogress', short);
    // Either way it ends: completed, or failed and moved to the DLQ (then gone from its queue).
    const outcome = await waitFor(async () => {
      if ((await (await queues.get('ppprogress').getJob(id))?.getState()) === 'completed') return 'completed';
      const d = (await listDeadLetters(queues, 'ppprogress')).find((x) => x.entry.originalJobId === id);
      return d && `dead-lettered: ${d.entry.failureReason}`;
    }, { timeoutMs: 60_000, what: 'the run to complete or be dead-lettered' });
    expect(outcome).toBe('completed');
    const steps = (await events(PP_KEYS.events)).filter((e) => e.startsWith('step:s')).map((e) => e.split(':')[1]);
    // Every step ran, in order; a step repeats only where a kill fell between its effect and its record (at
    // most once per kill: ctx.step is at least once there, docs/exactly-once.md).
    expect([...new Set(steps)]).toEqual(Array.from({ length: 12 }, (_, i) => `s${i}`));
    expect(steps.length - 12).toBeLessThanOrEqual(3);
  }, 360_000);

  it('a run killed -9 three times without a new step is dead-lettered as stalled (WORKER_MAX_STALLED_COUNT 2)', async () => {
    // The other half of the rule: tickwork lifts BullMQ's own limit on these paths and holds it itself, so
    // a job that only crashes its workers still ends in the DLQ, with BullMQ's reason.
    const short = { WORKER_LOCK_DURATION_MS: '1000', WORKER_STALLED_INTERVAL_MS: '500' };
    // An id of its own: the events list is shared with the other tests' jobs, whose generated ids repeat across queues.
    const { id } = await enqueue()(ppStuck, { n: 9 }, { jobId: 'stuck-1' });
    const starts = async () => (await events(PP_KEYS.events)).filter((e) => e.startsWith(`started:${id}:`)).length;
    // The step's *record* (the ledger's steps hash), not its effect: a kill between the two would have the next
    // delivery run the step again and record it, which is progress, and the run would rightly not be dead-lettered.
    const stepsKey = new IdempotencyLedger(redis, { prefix: 'tickwork' }).stepsKeyOf(`${ppStuck.name}#${id}`);
    for (let k = 1; k <= 3; k++) {
      const w = await startPublicWorker('ppstuck', short);
      // Its first step is recorded by the first delivery only; later ones replay it and wait.
      await waitFor(async () => (await starts()) >= k && (await redis.hlen(stepsKey)) >= 1, { timeoutMs: 30_000, what: `delivery ${k} waiting` });
      await w.app.stop('SIGKILL');
    }
    const last = await startPublicWorker('ppstuck', short);
    // A wait, not a measure: beside a CPU burner and a 100-kill chaos run it took over 60 s.
    const dead = await waitFor(async () => (await listDeadLetters(queues, 'ppstuck')).find((x) => x.entry.originalJobId === id), {
      timeoutMs: 150_000,
      what: 'the run dead-lettered',
    }).catch(async (err: unknown) => {
      // What a failure needs to be read: where the job is, how often BullMQ counted it stalled, and the last worker's log.
      const job = await queues.get('ppstuck').getJob(id);
      const state = job ? await job.getState() : 'gone';
      throw new Error(
        `${(err as Error).message}; the job is ${state} (stalledCounter ${job?.stalledCounter}, attemptsStarted ${job?.attemptsStarted}, ` +
          `attemptsMade ${job?.attemptsMade}); starts recorded ${await starts()}; the last worker's log:\n${last.app.lines.slice(-30).join('\n')}`,
      );
    });
    // At least the three kills' stalls (a loaded machine can add one: a 1 s lock not renewed in time).
    expect(dead.entry.failureReason).toMatch(/^job stalled more than allowable limit: it stalled \d+ times, more than WORKER_MAX_STALLED_COUNT \(2\)/);
    expect((await events(PP_KEYS.events)).filter((e) => e.startsWith(`first:${id}:`))).toHaveLength(1);
  }, 360_000);
});
