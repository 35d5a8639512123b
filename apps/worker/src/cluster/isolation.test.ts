/**
 * A master that stops answering (SIGSTOP: a frozen host, before any failover) holds up only the queues it
 * serves. A worker process serves alpha and delta, on different masters; one of alpha's runs waits for its
 * step's record while alpha's master is frozen, and delta's runs, claimed up front with a step each, still
 * complete meanwhile. Once the master answers again, alpha's run completes too.
 */
import { createEnqueue, type QueueSet, type RedisClient } from '@tickwork/core';
import { appEntry, freePort, REPO_ROOT, startApp, startClusterQueues, waitFor, type AppProcess, type ClusterQueues, type RedisClusterHandle } from '@tickwork/testkit';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { catalog, gated, GATE_KEY, GATED_STATE_KEY, keyed } from '../testing/cluster-jobs.js';

const PREFIX = 'iso';
const JOBS = 50;
const JOBS_MODULE = join(REPO_ROOT, 'apps', 'worker', 'dist', 'testing', 'cluster-jobs.js');

let cluster: RedisClusterHandle;
let redis: RedisClient;
let queues: QueueSet;
let worker: AppProcess | undefined;
let fixture: ClusterQueues | undefined;

beforeAll(async () => {
  // No replicas and a long node timeout: the frozen master is neither replaced nor judged failed meanwhile.
  ({ cluster, redis, queues } = fixture = await startClusterQueues(PREFIX, { replicas: 0, nodeTimeoutMs: 120_000 }));
}, 60_000);
afterAll(async () => {
  await worker?.stop('SIGKILL');
  await fixture?.stop();
});

it("a frozen master holds up only its own queues: the other queue's runs are claimed and completed meanwhile", async () => {
  const alphaMaster = await cluster.masterOf(`${PREFIX}:{alpha}:alpha:meta`);
  expect((await cluster.masterOf(`${PREFIX}:{delta}:delta:meta`)).port).not.toBe(alphaMaster.port);
  worker = startApp(appEntry('worker'), { ...cluster.env, QUEUE_PREFIX: PREFIX, PORT: String(await freePort()), JOBS_MODULE, LOG_LEVEL: 'warn', WORKER_CONCURRENCY: '20' });
  const enqueue = createEnqueue(catalog, queues);
  await enqueue(gated, {});
  await waitFor(async () => (await redis.get(GATED_STATE_KEY)) === 'waiting', { timeoutMs: 30_000, what: 'the gated run waiting at its gate' });

  // delta's Queue is made (and has checked its Redis) before the freeze: a new BullMQ Queue's first
  // commands may go to any node, the frozen one too.
  const delta = queues.get('delta');
  await delta.getCompletedCount();

  alphaMaster.pause();
  await redis.set(GATE_KEY, '1');
  // Past the gate, the run's second step records itself: that write waits on alpha's frozen master.
  await waitFor(async () => (await redis.get(GATED_STATE_KEY)) === 'claiming', { timeoutMs: 10_000, what: 'the gated run past its gate' });
  for (let i = 0; i < JOBS; i++) await enqueue(keyed, { i });
  await waitFor(async () => (await delta.getCompletedCount()) === JOBS, { timeoutMs: 30_000, what: `all ${JOBS} of delta's runs completed while alpha's master is frozen` });
  const results = (await delta.getJobs(['completed'], 0, JOBS)).map((j) => j.returnvalue as { i: number; doubled: number });
  expect(results.sort((a, b) => a.i - b.i)).toEqual(Array.from({ length: JOBS }, (_, i) => ({ i, doubled: i * 2 })));
  expect(await redis.get(GATED_STATE_KEY)).toBe('claiming');

  alphaMaster.resume();
  await waitFor(async () => (await redis.get(GATED_STATE_KEY)) === 'done', { timeoutMs: 30_000, what: "alpha's run completing once its master answers again" });
  await waitFor(async () => (await queues.get('alpha').getCompletedCount()) === 1, { timeoutMs: 10_000, what: "alpha's run acknowledged" });
}, 120_000);
