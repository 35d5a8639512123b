import { fileURLToPath } from 'node:url';
import { createLogger, QueueSet, type RedisClient } from '@tickwork/core';
import { freePort, startApp, startTestRedis, TOPOLOGIES, waitFor, type AppProcess, type TestRedis } from '@tickwork/testkit';
import type { Queue } from 'bullmq';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FX_KEYS } from './testing/exactly-once-fixtures.js';
import { readMetric } from './testing/read-metric.js';

const WORKER = fileURLToPath(new URL('../dist/main.js', import.meta.url));
const FIXTURES = fileURLToPath(new URL('../dist/testing/exactly-once-fixtures.js', import.meta.url));

// Every test on one Redis; on a Redis Cluster the 50 duplicates racing across processes.
describe.each(TOPOLOGIES)('exactly-once effects across 4 worker processes, on %s Redis', (topology) => {
  let target: TestRedis;
  let redis: RedisClient;
  let queues: QueueSet;
  let queue: Queue;
  const workers: { app: AppProcess; port: number }[] = [];

  const sumMetric = async (name: string, labels: Record<string, string>) =>
    (await Promise.all(workers.map((w) => readMetric(w.port, name, labels)))).reduce((a, b) => a + b, 0);

  beforeAll(async () => {
    target = await startTestRedis(topology);
    redis = target.client();
    queues = new QueueSet(target.connect('command'), 'tickwork', createLogger('test', 'silent'));
    queue = queues.get('fx');
    for (let i = 0; i < 4; i++) {
      const port = await freePort();
      const app = startApp(WORKER, {
        ...target.env,
        JOBS_MODULE: FIXTURES,
        WORKER_QUEUES: 'fx',
        WORKER_CONCURRENCY: '20',
        PORT: String(port),
        LOG_LEVEL: 'info',
      });
      workers.push({ app, port });
    }
    await Promise.all(workers.map((w) => w.app.waitForLog((l) => l.msg === 'worker ready', 'worker ready', 30_000)));
  }, 60_000);

  afterAll(async () => {
    await Promise.all(workers.map((w) => w.app.stop('SIGKILL')));
    await queues?.close();
    await target?.stop();
  });

  it('runs the side effect once when the same occurrence is enqueued 50 times at once', async () => {
    const jobs = await queue.addBulk(
      Array.from({ length: 50 }, () => ({ name: 'fx.effect', data: { occurrence: 'occ-50x', sleepMs: 300 } })),
    );
    await waitFor(async () => ((await queue.getJobCounts('completed')).completed ?? 0) >= 50, {
      timeoutMs: 60_000,
      what: '50 deliveries completed',
    });
    expect(await redis.lrange(FX_KEYS.effects('occ-50x'), 0, -1)).toHaveLength(1);
    // Every delivery completed with the one recorded result.
    const results = await Promise.all(jobs.map(async (j) => (await queue.getJob(j.id as string))?.returnvalue));
    expect(results).toEqual(Array.from({ length: 50 }, () => ({ effects: 1, key: 'fx.effect@occ-50x' })));
    expect(await sumMetric('tickwork_duplicates_suppressed_total', { job: 'fx.effect' })).toBe(49);
    const processesThatSuppressed = workers.filter((w) => w.app.logs().some((l) => l.msg === 'duplicate suppressed'));
    expect(processesThatSuppressed.length).toBeGreaterThanOrEqual(2);
    expect(await redis.get(`${queues.keyspace('fx').runPrefix}:ledger:fx.effect@occ-50x`)).toMatch(/^d\|/);
  }, 90_000);

  if (topology === 'standalone') {
    it('does not repeat the effect on a manual retry of a completed job', async () => {
      const job = await queue.add('fx.effect', { occurrence: 'occ-retry' });
      await waitFor(async () => (await job.getState()) === 'completed', { timeoutMs: 30_000, what: 'first run' });
      const suppressedBefore = await sumMetric('tickwork_duplicates_suppressed_total', { job: 'fx.effect' });
      const firstFinished = (await queue.getJob(job.id as string))?.finishedOn;
      await job.retry('completed');
      await waitFor(
        async () => {
          const again = await queue.getJob(job.id as string);
          return (await again?.getState()) === 'completed' && again?.finishedOn !== firstFinished;
        },
        { timeoutMs: 30_000, what: 'retried job completed again' },
      );
      expect(await sumMetric('tickwork_duplicates_suppressed_total', { job: 'fx.effect' })).toBe(suppressedBefore + 1);
      expect(await redis.llen(FX_KEYS.effects('occ-retry'))).toBe(1);
    }, 60_000);

    it('does not repeat the effect when re-enqueued with the same idempotency key, even after BullMQ forgot the job', async () => {
      // Key from defineJob({ idempotencyKey }): a new job id, same key.
      const first = await queue.add('fx.effect', { occurrence: 'occ-reenqueue' });
      await waitFor(async () => (await first.getState()) === 'completed', { timeoutMs: 30_000, what: 'first run' });
      const second = await queue.add('fx.effect', { occurrence: 'occ-reenqueue' });
      await waitFor(async () => (await second.getState()) === 'completed', { timeoutMs: 30_000, what: 'second run' });
      expect((await queue.getJob(second.id as string))?.returnvalue).toEqual({ effects: 1, key: 'fx.effect@occ-reenqueue' });
      expect(await redis.llen(FX_KEYS.effects('occ-reenqueue'))).toBe(1);

      // Key from the job id: the job is removed (as retention would), then the same id is enqueued again.
      const byId = await queue.add('fx.effect-by-id', { occurrence: 'occ-by-id' }, { jobId: 'order-42' });
      await waitFor(async () => (await byId.getState()) === 'completed', { timeoutMs: 30_000, what: 'by-id first run' });
      await byId.remove();
      const again = await queue.add('fx.effect-by-id', { occurrence: 'occ-by-id' }, { jobId: 'order-42' });
      await waitFor(async () => (await again.getState()) === 'completed', { timeoutMs: 30_000, what: 'by-id second run' });
      expect(await redis.lrange(FX_KEYS.effects('occ-by-id'), 0, -1)).toEqual(['fx.effect-by-id#order-42']);
    }, 60_000);
  }
});
