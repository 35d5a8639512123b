import { fileURLToPath } from 'node:url';
import { billingChargeMonthly, DEMO_CUSTOMERS, DEMO_KEYS, type ChargeRecord } from '@tickwork/jobs';
import { createLogger, jobOptions, QueueSet, type RedisClient } from '@tickwork/core';
import { freePort, startApp, startTestRedis, TOPOLOGIES, waitFor, type AppProcess, type TestRedis } from '@tickwork/testkit';
import type { Queue } from 'bullmq';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const WORKER = fileURLToPath(new URL('../dist/main.js', import.meta.url));

// Both tests on one Redis; on a Redis Cluster the crash-and-takeover one (the one that matters there).
describe.each(TOPOLOGIES)('billing killed -9, on %s Redis', (topology) => {
  let target: TestRedis;
  let redis: RedisClient;
  let queues: QueueSet;
  let queue: Queue;
  const apps: AppProcess[] = [];

  /** A worker with the default WORKER_MAX_STALLED_COUNT (2). */
  const startWorker = async () => {
    const app = startApp(WORKER, {
      ...target.env,
      WORKER_QUEUES: 'billing',
      PORT: String(await freePort()),
      // Short lock and lease so the crashed run is recovered within seconds.
      WORKER_LOCK_DURATION_MS: '2000',
      WORKER_STALLED_INTERVAL_MS: '1000',
    });
    apps.push(app);
    await app.waitForLog((l) => l.msg === 'worker ready', 'worker ready');
    return app;
  };

  beforeAll(async () => {
    target = await startTestRedis(topology);
    redis = target.client();
    queues = new QueueSet(target.connect('command'), 'tickwork', createLogger('test', 'silent'));
    queue = queues.get('billing');
  }, 60_000);

  afterAll(async () => {
    await Promise.all(apps.map((a) => a.stop('SIGKILL')));
    await queues?.close();
    await target?.stop();
  });

  const charges = async () => (await redis.lrange(DEMO_KEYS.charges, 0, -1)).map((c) => JSON.parse(c) as ChargeRecord);

  it('kill -9 in the middle of billing.charge-monthly: recovered, every customer charged exactly once', async () => {
    const first = await startWorker();
    const job = await queue.add(
      billingChargeMonthly.name,
      { cycle: '2030-01', pauseMsPerCustomer: 300 },
      jobOptions(billingChargeMonthly),
    );
    await waitFor(async () => (await redis.llen(DEMO_KEYS.charges)) >= 6, { timeoutMs: 30_000, what: '6 charges' });
    await first.stop('SIGKILL');
    const chargedBeforeCrash = (await charges()).length;
    expect(chargedBeforeCrash).toBeLessThan(DEMO_CUSTOMERS.length);

    const second = await startWorker();
    await waitFor(async () => (await job.getState()) === 'completed', { timeoutMs: 60_000, what: 'billing run completed' });

    const all = await charges();
    expect(all.every((c) => c.cycle === '2030-01')).toBe(true);
    // Each charge carries its step's own key, the same one a repeat after a crash would carry.
    expect(all.every((c) => c.idempotencyKey === `billing.charge-monthly#${job.id}/step/charge:${c.customerId}`)).toBe(true);
    const perCustomer = new Map<string, number>();
    for (const c of all) perCustomer.set(c.customerId, (perCustomer.get(c.customerId) ?? 0) + 1);
    expect([...perCustomer.keys()].sort()).toEqual(DEMO_CUSTOMERS.map((c) => c.id).sort());
    expect([...perCustomer.values()].every((n) => n === 1)).toBe(true);

    // The second worker resumed the run (not a fresh one): it took over the lease and kept the recorded steps.
    const takeover = second.logs().find((l) => l.msg === 'took over a run whose holder stopped renewing its lease');
    expect(takeover?.recordedSteps).toBeGreaterThanOrEqual(chargedBeforeCrash - 1);
    const result = (await queue.getJob(job.id as string))?.returnvalue as { totalCents: number; customers: number };
    expect(result.customers).toBe(DEMO_CUSTOMERS.length);
    expect(result.totalCents).toBe(DEMO_CUSTOMERS.reduce((s, c) => s + c.planCents, 0));
  }, 120_000);

  if (topology === 'standalone') {
    it('a run killed -9 three times, recording new steps each time, completes instead of being dead-lettered as stalled', async () => {
      // Only this test's workers take the run.
      await Promise.all(apps.map((a) => a.stop('SIGKILL')));
      await redis.del(DEMO_KEYS.charges);
      const job = await queue.add(billingChargeMonthly.name, { cycle: '2031-02', pauseMsPerCustomer: 250 }, jobOptions(billingChargeMonthly));
      // Three deliveries each charge a few more customers, then their worker is killed: three stalls, one more
      // than WORKER_MAX_STALLED_COUNT allows, but each after progress.
      for (const chargedAtLeast of [3, 7, 11]) {
        const worker = await startWorker();
        await waitFor(async () => (await redis.llen(DEMO_KEYS.charges)) >= chargedAtLeast, { timeoutMs: 30_000, what: `${chargedAtLeast} charges` });
        await worker.stop('SIGKILL');
      }
      const last = await startWorker();
      await waitFor(async () => ['completed', 'failed', 'unknown'].includes(await job.getState()), { timeoutMs: 60_000, what: 'the run finished' });

      // Not failed (and so not moved to billing.dlq): completed, every customer charged once.
      expect(await job.getState()).toBe('completed');
      expect((await charges()).map((c) => c.customerId).sort()).toEqual(DEMO_CUSTOMERS.map((c) => c.id).sort());
      // The last delivery had stalled before, made progress, and so started its stall count again.
      expect(last.logs().some((l) => l.msg === 'run made progress after stalling; its stall count starts again')).toBe(true);
    }, 180_000);
  }
});
