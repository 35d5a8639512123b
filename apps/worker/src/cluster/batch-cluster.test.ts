/**
 * Batch jobs on a private Redis Cluster (3 masters, a replica each), in a real worker process: a batch's
 * jobs, its lease keys and its writes carrying the queue's hash tag all live on the queue's slot; a batch
 * writing a key outside that slot fails its jobs to the DLQ, naming the tag to give the key.
 */
import { createEnqueue, scanKeys, slotOf, type QueueSet, type RedisClient } from '@tickwork/core';
import { listDeadLetters } from '@tickwork/operations';
import { appEntry, freePort, REPO_ROOT, startApp, startClusterQueues, waitFor, type AppProcess, type ClusterQueues, type RedisClusterHandle } from '@tickwork/testkit';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { catalog, sigma, SIGMA_TOTAL, untagged, UNTAGGED_TOTAL } from '../testing/cluster-batch-jobs.js';

const PREFIX = 'tw';
const JOBS_MODULE = join(REPO_ROOT, 'apps', 'worker', 'dist', 'testing', 'cluster-batch-jobs.js');

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

it("runs a batch job's batches on its queue's slot, and fails a batch writing outside it", async () => {
  worker = startApp(appEntry('worker'), { ...cluster.env, QUEUE_PREFIX: PREFIX, PORT: String(await freePort()), JOBS_MODULE, LOG_LEVEL: 'info' });
  await worker.waitForLog((l) => l.msg === 'worker ready', 'the worker on the cluster', 30_000);
  const enqueue = createEnqueue(catalog, queues);
  for (let n = 1; n <= 120; n++) await enqueue(sigma, { n });
  await enqueue(untagged, { n: 1 });

  await waitFor(async () => Number(await redis.get(SIGMA_TOTAL)) === (120 * 121) / 2 && (await queues.get('sigma').getCompletedCount()) === 120, {
    timeoutMs: 30_000,
    what: '120 sigma jobs committed',
  });
  const dead = await waitFor(async () => {
    const d = await listDeadLetters(queues, 'omega');
    return d.length === 1 ? d : undefined;
  }, { timeoutMs: 30_000, what: 'the untagged batch dead-lettered' });
  expect(dead[0]?.entry.failureReason).toMatch(/the batch writes "app:total", outside its queue's slot: on Redis Cluster the keys a batch writes must contain the queue's hash tag \{omega\}/);
  expect(await redis.get(UNTAGGED_TOTAL)).toBeNull();

  // Every key of the sigma queue, its batches' included, is on its slot.
  const keys: string[] = [];
  for await (const batch of scanKeys(redis, `${PREFIX}:{sigma}:*`)) keys.push(...batch);
  expect(keys.length).toBeGreaterThan(0);
  expect(new Set([...keys, SIGMA_TOTAL].map(slotOf))).toEqual(new Set([slotOf('{sigma}')]));
  expect(await redis.zcard(`${PREFIX}:{sigma}:sigma:batches`)).toBe(0);
}, 90_000);
