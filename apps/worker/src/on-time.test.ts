/**
 * The head start of on-time occurrences, against real scheduler and worker processes: the scheduler adds an
 * occurrence SCHEDULE_HEAD_START_MS before its time, the worker takes it then and holds it until its time,
 * so its handler (and its start's record) is never early; a worker whose clock is behind holds one at most
 * MAX_HEAD_START_MS; a held occurrence whose schedule is paused meanwhile, or which is cancelled, never runs.
 * While a worker process of an earlier tickwork (one that does not hold early occurrences) is registered,
 * the scheduler adds occurrences at their time.
 */
import { fileURLToPath } from 'node:url';
import { createLogger, QueueSet, SCHEDULED_RUN_OPTION, scheduledRunOf, WorkerRegistry, type ScheduledRun } from '@tickwork/core';
import { createSchedules, MAX_HEAD_START_MS, readHistory } from '@tickwork/schedules';
import { requestCancel } from '@tickwork/operations';
import { appEntry, freePort, startApp, startRedisServer, waitFor, type AppProcess, type RedisServerHandle } from '@tickwork/testkit';
import type { JobsOptions } from 'bullmq';
import type { Redis } from 'ioredis';
import { afterAll, afterEach, beforeAll, expect, it } from 'vitest';
import { catalog, fxOnTime, ON_TIME_RUNS } from './testing/on-time-fixtures.js';

const JOBS_MODULE = fileURLToPath(new URL('../dist/testing/on-time-fixtures.js', import.meta.url));
const PREFIX = 'tickwork';
const HEAD_START_MS = 500;

interface Run {
  jobId: string;
  nominal: number | undefined;
  startedAt: number;
}

let server: RedisServerHandle;
let redis: Redis;
let queues: QueueSet;
let apps: AppProcess[] = [];

beforeAll(async () => {
  server = await startRedisServer();
  redis = server.client();
  queues = new QueueSet(redis, PREFIX, createLogger('test', 'silent'));
});
afterAll(async () => {
  await queues.close();
  await server.stop();
});
afterEach(async () => {
  await Promise.all(apps.map((a) => a.stop('SIGKILL')));
  apps = [];
  await redis.flushall();
});

async function start(app: 'worker' | 'scheduler', env: Record<string, string> = {}): Promise<AppProcess> {
  const p = startApp(appEntry(app), { REDIS_URL: server.url, JOBS_MODULE, PORT: String(await freePort()), ...env });
  apps.push(p);
  await p.waitForLog((l) => l.msg === `${app} ready`, `${app} ready`);
  return p;
}

const runs = async () => (await redis.lrange(ON_TIME_RUNS, 0, -1)).map((r) => JSON.parse(r) as Run);
const queue = () => queues.get(fxOnTime.queue);

it('an occurrence is added and delivered its head start before its time, and its handler starts at its time, never before', async () => {
  await start('worker');
  await createSchedules({ redis, queues, catalog }).upsert('on-time', { job: fxOnTime, every: { seconds: 1 }, tz: 'UTC' });
  await start('scheduler', { SCHEDULE_HEAD_START_MS: String(HEAD_START_MS), SCHEDULE_TICK_MS: '100' });
  // Occurrences due while the scheduler started are late, as they would be without a head start: the
  // ones after its first second are the ones it claims ahead.
  const inTime = Date.now() + 1000;
  const onTime = async () => (await runs()).filter((r) => (r.nominal ?? 0) >= inTime);
  await waitFor(async () => (await onTime()).length >= 3, { timeoutMs: 30_000, what: 'three runs of the every-second schedule' });

  const ran = await onTime();
  // Each run's history record once it has its outcome (the handler's list entry comes first).
  const history = await waitFor(async () => {
    const h = new Map((await readHistory(redis, PREFIX, 'on-time', 50)).map((r) => [r.jobId, r]));
    return ran.every((r) => h.get(r.jobId)?.outcome) ? h : undefined;
  }, { what: 'the outcome of each run in its history' });
  for (const run of ran) {
    const nominal = run.nominal as number;
    const job = await queue().getJob(run.jobId);
    // Added and taken by the worker ahead of its time (no more than the head start, less timer slack)...
    expect(job?.timestamp, run.jobId).toBeLessThan(nominal);
    expect(job?.timestamp, run.jobId).toBeGreaterThanOrEqual(nominal - HEAD_START_MS - 50);
    expect(job?.processedOn, run.jobId).toBeLessThan(nominal);
    // ...but nothing of the run happened before its time: its start's record, its handler.
    expect(run.startedAt, run.jobId).toBeGreaterThanOrEqual(nominal);
    expect(Date.parse(history.get(run.jobId)?.startedAt ?? ''), run.jobId).toBeGreaterThanOrEqual(nominal);
    expect(history.get(run.jobId)?.outcome, run.jobId).toBe('completed');
  }
}, 60_000);

it('a schedule paused while its occurrence is held is not run: the hold comes before the start\'s gate', async () => {
  await start('worker');
  const schedules = createSchedules({ redis, queues, catalog });
  await schedules.upsert('paused-while-held', { job: fxOnTime, every: { seconds: 1 }, tz: 'UTC' });
  await start('scheduler', { SCHEDULE_HEAD_START_MS: String(HEAD_START_MS), SCHEDULE_TICK_MS: '100' });
  const seen = new Set<string>();
  // A pause that returns only after the occurrence's time (a busy machine) tests nothing: resumed, and tried on a later one.
  for (let attempt = 1; ; attempt++) {
    // An occurrence the worker has taken ahead of its time, and holds.
    const held = await waitFor(async () => {
      for (const job of await queue().getActive()) {
        const nominal = scheduledRunOf(job.opts)?.nominal;
        if (nominal !== undefined && nominal > Date.now() + 300 && !seen.has(String(job.id))) return { jobId: String(job.id), nominal };
      }
      return undefined;
    }, { timeoutMs: 15_000, intervalMs: 10, what: 'an occurrence held by the worker before its time' });
    seen.add(held.jobId);
    // Paused well into the hold (on the clock, not on work): long after what the worker does on taking it.
    await waitFor(() => Date.now() >= held.nominal - 200, { timeoutMs: 5000, intervalMs: 5, what: 'the middle of the hold' });
    expect(await schedules.pause('paused-while-held', 'maintenance')).toBe(true);
    if (Date.now() >= held.nominal) {
      expect(attempt, 'every pause returned after its occurrence was due').toBeLessThan(5);
      expect(await schedules.resume('paused-while-held')).toBe(true);
      continue;
    }
    const record = await waitFor(async () => (await readHistory(redis, PREFIX, 'paused-while-held', 50)).find((h) => h.jobId === held.jobId && h.outcome), {
      what: 'the held occurrence to end',
    });
    expect(record.outcome).toBe('skipped-paused');
    expect((await runs()).map((r) => r.jobId)).not.toContain(held.jobId);
    return;
  }
}, 90_000);

it('a worker whose clock is behind the scheduler holds an early occurrence at most MAX_HEAD_START_MS', async () => {
  await start('worker');
  // An occurrence 10 s ahead of this machine's clock: the worker does not hold it for 10 s.
  const addedAt = Date.now();
  const nominal = addedAt + 10_000;
  const meta: ScheduledRun = { schedule: 'ahead', nominal, catchUp: false };
  await queue().add(fxOnTime.name, {}, { jobId: 'ahead', [SCHEDULED_RUN_OPTION]: meta } as JobsOptions);
  const [run] = await waitFor(async () => {
    const r = await runs();
    return r.length > 0 ? r : undefined;
  }, { timeoutMs: 9000, what: 'the run, before its nominal time' });
  expect(run?.startedAt).toBeGreaterThanOrEqual(addedAt + MAX_HEAD_START_MS - 5);
  expect(run?.startedAt).toBeLessThan(nominal);
}, 90_000);

it('an occurrence cancelled while held for its time never runs', async () => {
  await start('worker');
  const meta: ScheduledRun = { schedule: 'held', nominal: Date.now() + MAX_HEAD_START_MS, catchUp: false };
  await queue().add(fxOnTime.name, {}, { jobId: 'held', [SCHEDULED_RUN_OPTION]: meta } as JobsOptions);
  await waitFor(async () => (await queue().getJob('held'))?.processedOn !== undefined, { timeoutMs: 5000, intervalMs: 10, what: 'the worker to take the occurrence' });
  await requestCancel({ queues, queue: fxOnTime.queue, jobId: 'held', by: 'alice', reason: 'not today' });
  const job = await waitFor(async () => {
    const j = await queue().getJob('held');
    return j?.finishedOn ? j : undefined;
  }, { timeoutMs: 10_000, what: 'the held occurrence to end' });
  expect(await job.getState()).toBe('failed');
  expect(job.failedReason).toContain('cancelled by alice');
  expect(job.attemptsMade).toBe(1);
  expect(await runs()).toEqual([]);
}, 90_000);

it('while a worker of an earlier tickwork is registered, occurrences are added at their time; once it leaves, ahead again', async () => {
  await start('worker');
  // What a worker process of an earlier tickwork registers: itself, without saying it holds early occurrences.
  const earlier = new WorkerRegistry(redis, { prefix: PREFIX, heartbeatMs: 1000, deadAfterMs: 3000, forgetAfterMs: 60_000, log: createLogger('test', 'silent') });
  await earlier.start();
  try {
    await createSchedules({ redis, queues, catalog }).upsert('mixed', { job: fxOnTime, every: { seconds: 1 }, tz: 'UTC' });
    const scheduler = await start('scheduler', { SCHEDULE_HEAD_START_MS: String(HEAD_START_MS), SCHEDULE_TICK_MS: '100' });
    const warned = await scheduler.waitForLog((l) => typeof l.msg === 'string' && l.msg.startsWith('worker processes that do not hold early occurrences'), 'the warning', 5000);
    expect(warned.processes).toEqual([earlier.tag]);
    const addedAt = async (from: number, count: number) =>
      waitFor(async () => {
        const ran = (await runs()).filter((r) => (r.nominal ?? 0) >= from);
        return ran.length >= count ? Promise.all(ran.map(async (r) => ({ nominal: r.nominal as number, added: (await queue().getJob(r.jobId))?.timestamp ?? NaN }))) : undefined;
      }, { timeoutMs: 20_000, what: `${count} runs from ${new Date(from).toISOString()}` });
    // At their time (the lane's timer may fire a millisecond or two early), not their head start ahead.
    for (const r of await addedAt(Date.now() + 1000, 3)) expect(r.added).toBeGreaterThanOrEqual(r.nominal - 5);

    await earlier.stop(true); // it stops cleanly, as an upgraded deployment's last earlier worker does
    await scheduler.waitForLog((l) => typeof l.msg === 'string' && l.msg.startsWith('on-time occurrences are added their head start ahead'), 'the head start back', 15_000);
    for (const r of await addedAt(Date.now() + 1000, 2)) expect(r.added).toBeLessThan(r.nominal - HEAD_START_MS / 2);
  } finally {
    await earlier.stop(true);
  }
}, 60_000);
