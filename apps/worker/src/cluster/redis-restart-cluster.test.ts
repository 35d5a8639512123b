/**
 * A Redis Cluster master that restarts in place having lost writes it acknowledged (redis-restart.test.ts
 * does the same on one Redis): the worker keeps each master's run_id by address, sees the new one when it
 * reconnects to the node, and hands its runs back, which redo the lost steps. No replicas, so the restarted
 * master keeps its slots (a failover to a replica is another case: docs/exactly-once.md).
 */
import { freePort, REPO_ROOT, appEntry, startApp, startClusterQueues, waitFor, type AppProcess, type ClusterQueues } from '@tickwork/testkit';
import { join } from 'node:path';
import { afterEach, expect, it } from 'vitest';
import { readMetric } from '../testing/read-metric.js';
import { gatedChargesKey, TX_GATE } from '../testing/tx-fixtures.js';

const PREFIX = 'tw';
const JOBS_MODULE = join(REPO_ROOT, 'apps', 'worker', 'dist', 'testing', 'tx-fixtures.js');
const RUNS = Array.from({ length: 4 }, (_, i) => `cluster-restart-${i}`);
const CUSTOMERS = 10;
const SNAPSHOT_AT = 5;
const KILLED_AT = 8;

let fixture: ClusterQueues | undefined;
let worker: AppProcess | undefined;

afterEach(async () => {
  await worker?.stop('SIGKILL');
  await fixture?.stop();
  worker = fixture = undefined;
});

it('a cluster master restarted from a snapshot older than steps it acknowledged: the runs redo the lost steps, each customer charged once, no attempt spent', async () => {
  fixture = await startClusterQueues(PREFIX, { masters: 3, replicas: 0 });
  const { cluster, redis, queues } = fixture;
  const port = await freePort();
  worker = startApp(appEntry('worker'), { ...cluster.env, QUEUE_PREFIX: PREFIX, PORT: String(port), JOBS_MODULE, LOG_LEVEL: 'info', WORKER_CONCURRENCY: String(RUNS.length) });
  const app = worker;
  await app.waitForLog((l) => l.msg === 'worker ready', 'the worker on the cluster', 45_000);
  try {
    const jobs = await Promise.all(RUNS.map((run) => queues.get('tx').add('tx.gated', { run, customers: CUSTOMERS, pauseAfter: [SNAPSHOT_AT, KILLED_AT] }, { attempts: 1 })));
    // The queue's master: its jobs, its runs' ledger records and the charges ({tx}) all live there.
    const master = await cluster.masterOf(gatedChargesKey(RUNS[0] as string));
    const node = master.client();
    node.on('error', () => undefined); // refused while the node is down: that is the test
    const charged = () => Promise.all(RUNS.map((run) => node.hlen(gatedChargesKey(run))));
    const allCharged = (n: number) => waitFor(async () => (await charged()).every((c) => c === n), { timeoutMs: 60_000, what: `every run charging ${n} customers` });

    await allCharged(SNAPSHOT_AT);
    expect(await node.save()).toBe('OK');
    await redis.set(TX_GATE, '1');
    await allCharged(KILLED_AT);
    // The gate may live on another master, which keeps it: close it again so the runs handed back after the
    // restart wait at their first pause (5 charges) instead of racing this test's read of the charges.
    await redis.set(TX_GATE, '0');

    await master.kill();
    await master.restart();
    await cluster.ready();
    expect(await charged()).toEqual(RUNS.map(() => SNAPSHOT_AT));
    await redis.set(TX_GATE, '99');

    const states = await waitFor(async () => {
      const s = await Promise.all(jobs.map((j) => j.getState()));
      return s.every((state) => state === 'completed' || state === 'failed') ? s : undefined;
    }, { timeoutMs: 60_000, intervalMs: 100, what: 'every run finished' });
    expect(await Promise.all(RUNS.map(async (run) => ({ run, charges: await node.hgetall(gatedChargesKey(run)) })))).toEqual(
      RUNS.map((run) => ({ run, charges: Object.fromEntries(Array.from({ length: CUSTOMERS }, (_, i) => [`c${i}`, '1'])) })),
    );
    expect(states).toEqual(RUNS.map(() => 'completed'));
    const said = app.logs().filter((l) => typeof l.msg === 'string' && l.msg.startsWith('Redis restarted'));
    expect(said).toHaveLength(1);
    expect(said[0]).toMatchObject({ level: 40, runs: RUNS.length, redis: `127.0.0.1:${master.port}` });
    expect(await readMetric(port, 'tickwork_worker_redis_restarts_total')).toBe(1);
  } catch (err) {
    console.error(app.lines.slice(-80).join('\n'));
    throw err;
  }
}, 180_000);
