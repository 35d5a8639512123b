import { fileURLToPath } from 'node:url';
import { billingChargeMonthly, DEMO_CUSTOMERS, DEMO_KEYS, type ChargeRecord } from '@tickwork/jobs';
import { createLogger, createRedis, jobOptions, listDeadLetters, QueueSet } from '@tickwork/runtime';
import { freePort, startApp, startRedisServer, waitFor, type AppProcess, type RedisServerHandle } from '@tickwork/testkit';
import type { Redis } from 'ioredis';
import { afterAll, beforeAll, expect, it } from 'vitest';

const WORKER = fileURLToPath(new URL('../dist/main.js', import.meta.url));

let server: RedisServerHandle;
let redis: Redis;
let queues: QueueSet;
const apps: AppProcess[] = [];

/** A worker with the default WORKER_MAX_STALLED_COUNT (2) and a short lock, so each stall is seen in seconds. */
const startWorker = async () => {
  const app = startApp(WORKER, {
    REDIS_URL: server.url,
    WORKER_QUEUES: 'billing',
    PORT: String(await freePort()),
    WORKER_LOCK_DURATION_MS: '2000',
    WORKER_STALLED_INTERVAL_MS: '1000',
  });
  apps.push(app);
  await app.waitForLog((l) => l.msg === 'worker ready', 'worker ready', 30_000);
  return app;
};

beforeAll(async () => {
  server = await startRedisServer();
  redis = server.client();
  queues = new QueueSet(createRedis(server.url, 'command'), 'tickwork', createLogger('test', 'silent'));
}, 30_000);

afterAll(async () => {
  await Promise.all(apps.map((a) => a.stop('SIGKILL')));
  await queues?.close();
  await server?.stop();
});

it('a run killed -9 three times, recording new steps each time, completes instead of being dead-lettered as stalled', async () => {
  const job = await queues.get('billing').add(billingChargeMonthly.name, { cycle: '2031-02', pauseMsPerCustomer: 250 }, jobOptions(billingChargeMonthly));
  // Three deliveries each charge a few more customers, then their worker is killed: three stalls, one more
  // than WORKER_MAX_STALLED_COUNT allows, but each after progress.
  for (const chargedAtLeast of [3, 7, 11]) {
    const worker = await startWorker();
    await waitFor(async () => (await redis.llen(DEMO_KEYS.charges)) >= chargedAtLeast, { timeoutMs: 30_000, what: `${chargedAtLeast} charges` });
    await worker.stop('SIGKILL');
  }
  const last = await startWorker();
  await waitFor(async () => ['completed', 'failed'].includes(await job.getState()), { timeoutMs: 60_000, what: 'the run finished' });

  expect(await job.getState()).toBe('completed');
  expect(await listDeadLetters(queues, 'billing')).toEqual([]);
  const charges = (await redis.lrange(DEMO_KEYS.charges, 0, -1)).map((c) => JSON.parse(c) as ChargeRecord);
  expect(charges.map((c) => c.customerId).sort()).toEqual(DEMO_CUSTOMERS.map((c) => c.id).sort());
  // The last delivery had stalled before, made progress, and so started its stall count again.
  expect(last.logs().some((l) => l.msg === 'run made progress after stalling; its stall count starts again')).toBe(true);
}, 180_000);
