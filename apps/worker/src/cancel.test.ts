/**
 * Cancelling jobs, against real worker processes (the stock worker with a fixture catalog): a running job's
 * handler sees its signal abort, the run ends failed as `cancelled by ...`, is not retried, not
 * dead-lettered and counted as cancelled; a waiting or delayed job never runs; the request is cleared so an
 * operator's retry runs the job again, resuming from its recorded steps.
 */
import { fileURLToPath } from 'node:url';
import { createLogger, createEnqueue, QueueSet } from '@tickwork/core';
import { createCatalogSource, createSchedules, readHistory } from '@tickwork/schedules';
import { requestCancel, JobNotFoundError, JobNotCancellableError, cancelRequestsKey } from '@tickwork/operations';
import { appEntry, freePort, startApp, startRedisServer, waitFor, type AppProcess, type RedisServerHandle } from '@tickwork/testkit';
import type { Redis } from 'ioredis';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { catalog, CX_KEYS, cxWait } from './testing/cancel-fixtures.js';
import { readMetric } from './testing/read-metric.js';

const JOBS_MODULE = fileURLToPath(new URL('../dist/testing/cancel-fixtures.js', import.meta.url));
const PREFIX = 'tickwork';
let server: RedisServerHandle;
let redis: Redis;
let queues: QueueSet;
let workers: { app: AppProcess; port: number }[] = [];

beforeAll(async () => {
  server = await startRedisServer();
  redis = server.client();
  queues = new QueueSet(redis, PREFIX, createLogger('test', 'silent'));
});
afterAll(async () => {
  await queues.close();
  await server.stop();
});
beforeEach(async () => {
  await redis.flushall();
});
afterEach(async () => {
  await Promise.all(workers.map((w) => w.app.stop('SIGTERM')));
  workers = [];
});

async function startWorker(): Promise<{ app: AppProcess; port: number }> {
  const port = await freePort();
  const app = startApp(appEntry('worker'), { REDIS_URL: server.url, JOBS_MODULE, PORT: String(port), WORKER_CONCURRENCY: '2', LOG_LEVEL: 'info' });
  workers.push({ app, port });
  await app.waitForLog((l) => l.msg === 'worker ready', 'worker ready');
  return { app, port };
}

const events = () => redis.lrange(CX_KEYS.events, 0, -1);
const enqueue = () => createEnqueue(catalog, queues);
/** Runs cx.wait's schedule now, as the dashboard's button does (the schedule stored first, as a scheduler stores it). */
async function runNow(): Promise<string> {
  const log = createLogger('test', 'silent');
  await createCatalogSource({ redis, queues, catalog, log }).put(cxWait);
  return (await createSchedules({ redis, queues, catalog, log }).runNow(cxWait.name, { by: 'test' })).jobId;
}
const stateOf = async (id: string) => (await queues.get('cx').getJob(id))?.getState();

describe('cancelling a job', () => {
  it("aborts a running job's signal on whichever worker runs it: failed as cancelled, not retried, not dead-lettered, counted", async () => {
    // Two worker processes: the request reaches both by pub/sub; only the one running the job acts.
    const [a, b] = [await startWorker(), await startWorker()];
    const id = await runNow(); // a run of cx.wait's schedule, which its history records (an ad-hoc one it does not)
    await waitFor(async () => (await events()).includes(`step:${id}`), { what: 'the handler to record its step and wait' });

    await requestCancel({ queues, queue: 'cx', jobId: id, by: 'alice', reason: 'wrong customer' });
    const job = await waitFor(async () => {
      const j = await queues.get('cx').getJob(id);
      return (await j?.getState()) === 'failed' ? j : undefined;
    }, { what: 'the job to end' });
    expect(await events()).toContain(`aborted:${id}:JobCancelledError: cancelled by alice: wrong customer`);
    expect(job?.failedReason).toBe('cancelled by alice: wrong customer');
    expect(job?.attemptsMade).toBe(1); // three attempts allowed, one made: not retried
    expect(await queues.get('cx.dlq').count()).toBe(0);
    const metric = async (name: string) => (await readMetric(a.port, name, { queue: 'cx' })) + (await readMetric(b.port, name, { queue: 'cx' }));
    expect(await metric('tickwork_jobs_cancelled_total')).toBe(1);
    expect(await metric('tickwork_job_attempts_failed_total')).toBe(0);
    expect(await metric('tickwork_dead_lettered_total')).toBe(0);
    const [occurrence] = await readHistory(redis, PREFIX, 'cx.wait');
    expect(occurrence).toMatchObject({ outcome: 'cancelled', error: 'cancelled by alice: wrong customer' });
    // The request took effect and is gone, so an operator's retry runs the job, from its recorded step.
    expect(await redis.hlen(cancelRequestsKey(PREFIX))).toBe(0);
    await redis.set(CX_KEYS.finish, '1');
    await job?.retry('failed');
    await waitFor(async () => (await stateOf(id)) === 'completed', { what: 'the retried job to complete' });
    expect((await events()).filter((e) => e === `step:${id}`)).toHaveLength(1);
    expect(await events()).toContain(`completed:${id}`);
    const logged = [...a.app.logs(), ...b.app.logs()];
    expect(logged.filter((l) => l.msg === 'job cancelled while running')).toEqual([expect.objectContaining({ jobId: id, reason: 'cancelled by alice: wrong customer' })]);
    expect(logged.filter((l) => l.msg === 'job attempt failed' || l.msg === 'job dead-lettered')).toEqual([]);
  });

  it('never runs a job cancelled while it waited, even with no worker up at the time of the request', async () => {
    const { id } = await enqueue()(cxWait, { n: 2 });
    await requestCancel({ queues, queue: 'cx', jobId: id, by: 'bob' });
    const { port } = await startWorker(); // reads the pending requests at start
    await waitFor(async () => (await stateOf(id)) === 'failed', { what: 'the cancelled job to end' });
    expect((await queues.get('cx').getJob(id))?.failedReason).toBe('cancelled by bob');
    expect(await events()).toEqual([]);
    expect(await readMetric(port, 'tickwork_jobs_cancelled_total', { queue: 'cx' })).toBe(1);
    expect(await queues.get('cx.dlq').count()).toBe(0);
  });

  it('never runs a delayed job cancelled while a worker is up (the request arrives by pub/sub)', async () => {
    await startWorker();
    const { id } = await enqueue()(cxWait, { n: 3 }, { delayMs: 1500 });
    expect(await stateOf(id)).toBe('delayed');
    await requestCancel({ queues, queue: 'cx', jobId: id, by: 'carol', reason: 'not needed' });
    await waitFor(async () => (await stateOf(id)) === 'failed', { what: 'the cancelled job to end when due' });
    expect((await queues.get('cx').getJob(id))?.failedReason).toBe('cancelled by carol: not needed');
    expect(await events()).toEqual([]);
  });

  it('refuses an unknown job id and a finished job with a clear error, recording nothing', async () => {
    await expect(requestCancel({ queues, queue: 'cx', jobId: 'no-such-id', by: 'dave' })).rejects.toThrow(JobNotFoundError);
    await expect(requestCancel({ queues, queue: 'cx', jobId: 'no-such-id', by: 'dave' })).rejects.toThrow('no job "no-such-id" in queue "cx"');
    await redis.set(CX_KEYS.finish, '1');
    await startWorker();
    const { id } = await enqueue()(cxWait, { n: 4 });
    await waitFor(async () => (await stateOf(id)) === 'completed', { what: 'the job to complete' });
    await expect(requestCancel({ queues, queue: 'cx', jobId: id, by: 'dave' })).rejects.toThrow(JobNotCancellableError);
    expect(await redis.hlen(cancelRequestsKey(PREFIX))).toBe(0);
  });
});
