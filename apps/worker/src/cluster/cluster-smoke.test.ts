/**
 * A real worker process on a private Redis Cluster (3 masters, a replica each), configured only by
 * REDIS_CLUSTER_NODES: it runs jobs of two queues whose slots are served by different masters, every key
 * of a queue (BullMQ's, its DLQ's, its runs' ledger records and step results) is on that queue's slot,
 * and a final failure lands in the queue's DLQ. Idle, it exits at once on SIGTERM.
 */
import { createEnqueue, dlqName, type QueueSet, scanKeys, slotOf, type RedisClient } from '@tickwork/core';
import { listDeadLetters } from '@tickwork/operations';
import { appEntry, freePort, REPO_ROOT, startApp, startClusterQueues, waitFor, type AppProcess, type ClusterQueues, type RedisClusterHandle } from '@tickwork/testkit';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { catalog, keyed, plain, poison } from '../testing/cluster-jobs.js';

const PREFIX = 'tw';
const JOBS_MODULE = join(REPO_ROOT, 'apps', 'worker', 'dist', 'testing', 'cluster-jobs.js');

let cluster: RedisClusterHandle;
let redis: RedisClient;
let queues: QueueSet;
let worker: AppProcess | undefined;

let fixture: ClusterQueues | undefined;
beforeAll(async () => {
  ({ cluster, redis, queues } = fixture = await startClusterQueues(PREFIX));
}, 60_000);
afterAll(async () => {
  await worker?.stop();
  await fixture?.stop();
});

async function startWorker(): Promise<AppProcess> {
  const app = startApp(appEntry('worker'), { ...cluster.env, QUEUE_PREFIX: PREFIX, PORT: String(await freePort()), JOBS_MODULE, LOG_LEVEL: 'info' });
  await app.waitForLog((l) => l.msg === 'worker ready', 'the worker on the cluster', 30_000);
  return app;
}

it('runs jobs of two queues on different masters, each queue on its own slot, with its DLQ', async () => {
  worker = await startWorker();

  const enqueue = createEnqueue(catalog, queues);
  for (let i = 0; i < 20; i++) await enqueue(plain, { i });
  for (let i = 0; i < 10; i++) await enqueue(keyed, { i });
  await enqueue(poison, { i: 1 });

  await waitFor(
    async () => {
      const [a, d] = await Promise.all([queues.get('alpha').getCompletedCount(), queues.get('delta').getCompletedCount()]);
      const dead = await queues.get(dlqName('delta')).count();
      return a === 20 && d === 10 && dead === 1;
    },
    { timeoutMs: 30_000, what: '20 alpha and 10 delta jobs completed, 1 dead letter' },
  );
  // Nothing went wrong on the way besides the poison job's failure and its alert (a CROSSSLOT reply would be an error).
  expect(worker.logs().filter((l) => Number(l.level) >= 50 && !['job attempt failed', 'alert'].includes(String(l.msg))).map((l) => l.msg)).toEqual([]);
  const completed = await queues.get('delta').getCompleted();
  expect(completed.map((j) => j.returnvalue as { i: number; doubled: number }).sort((x, y) => x.i - y.i)).toEqual(
    Array.from({ length: 10 }, (_, i) => ({ i, doubled: 2 * i })),
  );
  const dead = await listDeadLetters(queues, 'delta');
  expect(dead.map((d) => d.entry.jobName)).toEqual(['cl.poison']);

  // The two queues are served by different masters.
  const alphaMaster = await cluster.masterOf(`${PREFIX}:{alpha}:alpha:meta`);
  const deltaMaster = await cluster.masterOf(`${PREFIX}:{delta}:delta:meta`);
  expect(alphaMaster.port).not.toBe(deltaMaster.port);

  // Every key tickwork wrote for a queue is on that queue's slot; none is in the single-Redis layout.
  const keys: string[] = [];
  for await (const batch of scanKeys(redis, `${PREFIX}:*`)) keys.push(...batch);
  const alphaKeys = keys.filter((k) => k.startsWith(`${PREFIX}:{alpha}:`));
  const deltaKeys = keys.filter((k) => k.startsWith(`${PREFIX}:{delta}:`));
  expect(alphaKeys.some((k) => k.startsWith(`${PREFIX}:{alpha}:alpha:`))).toBe(true);
  expect(deltaKeys.some((k) => k.startsWith(`${PREFIX}:{delta}:delta.dlq:`))).toBe(true);
  expect(deltaKeys.filter((k) => k.startsWith(`${PREFIX}:{delta}:ledger:`) && !k.endsWith(':steps'))).toHaveLength(10);
  expect(new Set(alphaKeys.map(slotOf))).toEqual(new Set([slotOf('{alpha}')]));
  expect(new Set(deltaKeys.map(slotOf))).toEqual(new Set([slotOf('{delta}')]));
  expect(keys.filter((k) => /^tw:(alpha|delta|ledger):/.test(k))).toEqual([]);
}, 90_000);

/**
 * What a rolling deploy relies on: an idle worker stops at once. Each queue's BullMQ Worker waits for a job
 * in a BZPOPMIN (up to 5 s) on a blocking cluster client; its close used to have BullMQ's cluster recovery
 * connect that client again first, which with tickwork's settled connect took 2.6 s and more (closeWorker in
 * @tickwork/bullmq-engine). Measured from the signal to the process's exit: about 25 ms idle, under 150 ms
 * beside three CPU burners on 2 cores; the bound is well below the 2.5 s wait that reconnect alone took.
 */
it('exits at once on SIGTERM with no job running', async () => {
  // The worker of the test above, idle once its jobs are done; a new one if that test did not get so far.
  if (!worker || worker.proc.exitCode !== null) worker = await startWorker();
  const idle = worker;
  await waitFor(async () => (await Promise.all(['alpha', 'delta'].map((q) => queues.get(q).getActiveCount()))).every((n) => n === 0), { what: 'no job running' });
  const signalledAt = performance.now();
  const code = await idle.stop('SIGTERM');
  const exitMs = performance.now() - signalledAt;
  expect(code).toBe(0);
  expect(idle.logs().find((l) => l.msg === 'workers drained')).toMatchObject({ timedOut: false });
  expect(exitMs).toBeLessThan(2000);
}, 60_000);
