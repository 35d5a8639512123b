/**
 * How long the ledger remembers a run, place by place (README: "How long duplicates are suppressed"), with
 * a real worker process and short windows: a duplicate inside each window is suppressed, and each record
 * goes when its window ends, so Redis keeps nothing per run past it.
 */
import { fileURLToPath } from 'node:url';
import { createLogger, createRedis, QueueSet, SCHEDULED_RUN_OPTION } from '@tickwork/core';
import { IdempotencyLedger, jobRecordKey } from '@tickwork/exactly-once';
import { listDlqItems, redriveDeadLetters } from '@tickwork/operations';
import { freePort, startApp, startRedisServer, waitFor, type AppProcess, type RedisServerHandle } from '@tickwork/testkit';
import type { Job, JobsOptions } from 'bullmq';
import type { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { catalog, RT_KEYS } from './testing/retention-fixtures.js';

const WORKER = fileURLToPath(new URL('../dist/main.js', import.meta.url));
const FIXTURES = fileURLToPath(new URL('../dist/testing/retention-fixtures.js', import.meta.url));
const HOUR = 3600_000;

let server: RedisServerHandle;
let redis: Redis;
let queues: QueueSet;
let ledger: IdempotencyLedger;
const apps: AppProcess[] = [];

const startWorker = async () => {
  const app = startApp(WORKER, {
    REDIS_URL: server.url,
    JOBS_MODULE: FIXTURES,
    PORT: String(await freePort()),
    IDEMPOTENCY_RETENTION_HOURS: '2',
    IDEMPOTENCY_UNFINISHED_RETENTION_HOURS: '5',
    // Short lock and lease so a killed worker's run is taken over within seconds.
    WORKER_LOCK_DURATION_MS: '1500',
    WORKER_STALLED_INTERVAL_MS: '500',
  });
  apps.push(app);
  await app.waitForLog((l) => l.msg === 'worker ready', 'worker ready', 30_000);
  return app;
};

const add = (name: string, data: Record<string, unknown>, opts: JobsOptions = {}) => queues.get('rt').add(name, data, opts);
const completed = (job: Job, what: string) =>
  waitFor(async () => (await job.getState()) === 'completed', { timeoutMs: 30_000, what });
const effects = (name: string) => redis.llen(RT_KEYS.effects(name));

beforeAll(async () => {
  server = await startRedisServer();
  redis = server.client();
  queues = new QueueSet(createRedis(server.url, 'command'), 'tickwork', createLogger('test', 'silent'));
  ledger = new IdempotencyLedger(redis, { prefix: 'tickwork' });
  await startWorker();
}, 60_000);

afterAll(async () => {
  await Promise.all(apps.map((a) => a.stop('SIGKILL')));
  await queues?.close();
  await server?.stop();
});

describe('a run named by a job id BullMQ generated: remembered in the job itself, while BullMQ keeps the job', () => {
  it('keeps no key of its own, and suppresses an operator retry of the completed job', async () => {
    const job = await add('rt.by-id', { name: 'generated' });
    await completed(job, 'first run');
    const id = String(job.id);
    const place = { kind: 'job', jobKey: jobRecordKey('tickwork', 'rt', id) } as const;
    expect(await ledger.inspect(`rt.by-id#${id}`, place)).toMatchObject({ state: 'done', steps: {} });
    expect(await redis.keys('tickwork:ledger:*')).toEqual([]);

    const first = (await queues.get('rt').getJob(id))?.finishedOn;
    await job.retry('completed');
    await waitFor(async () => {
      const again = await queues.get('rt').getJob(id);
      return (await again?.getState()) === 'completed' && again?.finishedOn !== undefined && again.finishedOn !== first;
    }, { timeoutMs: 30_000, what: 'retried job done' });
    expect(await effects('generated')).toBe(1);
    // When BullMQ removes the job (its removeOnComplete), nothing of the run is left behind.
    await (await queues.get('rt').getJob(id))?.remove();
    expect(await redis.exists(place.jobKey)).toBe(0);
    expect(await redis.keys('tickwork:ledger:*')).toEqual([]);
  });

  it('a redelivery after kill -9 resumes the run from its steps: the effect is not repeated', async () => {
    const job = await add('rt.by-id', { name: 'killed', pauseMs: 60_000 });
    await waitFor(async () => (await redis.get(RT_KEYS.paused('killed'))) === String(job.id), { timeoutMs: 30_000, what: 'run paused after its step' });
    // The pause marker is a plain ctx.redis write, which can reach Redis before the step's record on a sole
    // delivery (docs/exactly-once.md, "When a run is claimed"); a kill between the two repeats the step, by
    // design. What this test holds is that a *recorded* step is not repeated, so it kills after the record.
    const stepsKey = ledger.stepsKeyOf(`rt.by-id#${job.id}`);
    await waitFor(async () => (await redis.hexists(stepsKey, 'effect')) === 1, { timeoutMs: 30_000, what: 'the step recorded' });
    await Promise.all(apps.splice(0).map((a) => a.stop('SIGKILL')));
    await redis.del(RT_KEYS.paused('killed'));
    await job.updateData({ name: 'killed', pauseMs: 0 });
    await startWorker();
    await completed(job, 'run taken over and completed');
    expect(await effects('killed')).toBe(1);
    const place = { kind: 'job', jobKey: jobRecordKey('tickwork', 'rt', String(job.id)) } as const;
    expect(await ledger.inspect(`rt.by-id#${job.id}`, place)).toMatchObject({ state: 'done', claims: 2 });
  }, 90_000);

  it('a dead-lettered run keeps its steps for IDEMPOTENCY_UNFINISHED_RETENTION_HOURS; its re-drive resumes them', async () => {
    const job = await add('rt.by-id', { name: 'redriven', failAfterStep: true });
    const key = `rt.by-id#${job.id}`;
    const [dead] = await waitFor(async () => {
      const entries = await queues.get('rt.dlq').getJobs(['waiting'], 0, -1);
      return entries.length > 0 ? entries : undefined;
    }, { timeoutMs: 30_000, what: 'dead-lettered' });
    const stepsTtl = await redis.pttl(ledger.stepsKeyOf(key));
    expect(stepsTtl).toBeGreaterThan(4.9 * HOUR);
    expect(stepsTtl).toBeLessThanOrEqual(5 * HOUR);

    // The re-driven job would fail again; make it pass, as fixing the cause would.
    await dead?.updateData({ ...(dead.data as object), payload: { name: 'redriven', failAfterStep: false } });
    const [outcome] = await redriveDeadLetters({ queues, queue: 'rt', selector: { items: await listDlqItems(queues, 'rt') }, catalog });
    const redriven = await queues.get('rt').getJob(outcome?.newJobId ?? '');
    if (!redriven) throw new Error('re-driven job not found');
    await completed(redriven, 're-driven run completed');
    expect(await effects('redriven')).toBe(1);
    // Done: the steps are gone and the record lives under the run's own key for the window.
    expect(await redis.exists(ledger.stepsKeyOf(key))).toBe(0);
    expect(await ledger.inspect(key)).toMatchObject({ state: 'done' });
    expect(await redis.pttl(ledger.keyOf(key))).toBeGreaterThan(1.9 * HOUR);
  }, 60_000);
});

describe('a run with a key of its own: remembered for its window, then forgotten', () => {
  it("idempotencyWindow: a duplicate inside the job's window is suppressed; after it the key runs again", async () => {
    const first = await add('rt.windowed', { name: 'w1' });
    await completed(first, 'first run');
    const key = ledger.keyOf('rt.windowed@w1');
    const ttl = await redis.pttl(key);
    expect(ttl).toBeGreaterThan(0);
    expect(ttl).toBeLessThanOrEqual(3000);
    const inside = await add('rt.windowed', { name: 'w1' });
    await completed(inside, 'duplicate inside the window');
    expect(await effects('w1')).toBe(1);
    expect(await redis.exists(ledger.stepsKeyOf('rt.windowed@w1'))).toBe(0);

    await waitFor(async () => (await redis.exists(key)) === 0, { timeoutMs: 10_000, what: 'the record to expire with its window' });
    const after = await add('rt.windowed', { name: 'w1' });
    await completed(after, 'a run after the window');
    expect(await effects('w1')).toBe(2);
  }, 60_000);

  it('a job id the producer chose is kept for IDEMPOTENCY_RETENTION_HOURS: a re-add after BullMQ removed the job is suppressed', async () => {
    const first = await add('rt.by-id', { name: 'chosen' }, { jobId: 'order-7' });
    await completed(first, 'first run');
    const key = ledger.keyOf('rt.by-id#order-7');
    expect(await redis.pttl(key)).toBeGreaterThan(1.9 * HOUR);
    expect(await redis.pttl(key)).toBeLessThanOrEqual(2 * HOUR);
    await first.remove();
    const again = await add('rt.by-id', { name: 'chosen' }, { jobId: 'order-7' });
    await completed(again, 're-added run');
    expect(await effects('chosen')).toBe(1);
  });

  it("a scheduled occurrence is kept for its schedule's catch-up window when that is longer", async () => {
    const nominal = Date.UTC(2030, 0, 1);
    const job = await add('rt.scheduled', { name: 'scheduled' }, {
      jobId: 'rt.scheduled@2030-01-01T000000.000Z',
      [SCHEDULED_RUN_OPTION]: { schedule: 'rt.scheduled', nominal, catchUp: true },
    } as JobsOptions);
    await completed(job, 'occurrence run');
    const ttl = await redis.pttl(ledger.keyOf(`rt.scheduled@${new Date(nominal).toISOString()}`));
    expect(ttl).toBeGreaterThan(47.9 * HOUR);
    expect(ttl).toBeLessThanOrEqual(48 * HOUR);
  });
});
