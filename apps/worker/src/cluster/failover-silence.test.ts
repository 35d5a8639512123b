/**
 * Issue 37 §2, a queue that never goes silent, on a 3-master Redis Cluster with a replica each: two real
 * worker processes idle on queue alpha; the master holding alpha's slot is frozen (SIGSTOP: a paused VM, a
 * partition) or killed -9, in turn; once a live node names its replica master (promotion), a job is
 * enqueued through the live nodes and must be taken by a worker. `pnpm test` runs 2 failovers (one of
 * each); `pnpm test:failover` runs TICKWORK_FAILOVERS=50. Each failover prints its times and the target,
 * every job taken within promotion + 5 s, is printed MET or NOT MET; the test itself holds each job to be
 * taken at all within 60 s (the silence the issue found), not to the 5 s, which a loaded machine may miss.
 */
import { createEnqueue, createLogger, createRedis, QueueSet, type RedisClient } from '@tickwork/core';
import { appEntry, freePort, REPO_ROOT, startApp, startRedisCluster, waitFor, type AppProcess, type RedisClusterHandle } from '@tickwork/testkit';
import { Redis } from 'ioredis';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { catalog, plain } from '../testing/cluster-jobs.js';

const PREFIX = 'fs';
const JOBS_MODULE = join(REPO_ROOT, 'apps', 'worker', 'dist', 'testing', 'cluster-jobs.js');
const ALPHA_KEY = `${PREFIX}:{alpha}:alpha:meta`;
const TARGET_MS = 5000;
const FAILOVERS = failoverCount();

let cluster: RedisClusterHandle;
let redis: RedisClient;
let queues: QueueSet;
const workers: AppProcess[] = [];

function failoverCount(): number {
  const raw = process.env.TICKWORK_FAILOVERS;
  if (raw === undefined || raw.trim() === '') return 2;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < 1) throw new Error(`TICKWORK_FAILOVERS must be a whole number ≥ 1, got ${JSON.stringify(raw)}`);
  return n;
}

beforeAll(async () => {
  // cluster-node-timeout 3 s: a promotion in a few seconds; full coverage off, as docker-compose.cluster.yml.
  cluster = await startRedisCluster({ nodeTimeoutMs: 3000, requireFullCoverage: false });
  redis = createRedis(cluster.target, 'command');
  queues = new QueueSet(redis, PREFIX, createLogger('test', 'silent'));
}, 90_000);
afterAll(async () => {
  await Promise.all(workers.map((w) => w.stop('SIGKILL')));
  for (const node of cluster?.nodes ?? []) node.resume(); // a failed run may leave its victim frozen
  await queues?.close();
  redis?.disconnect();
  await cluster?.stop();
});

/** The port of the master of alpha's slot as `port`'s node sees it, or undefined if it does not answer within 1 s. */
async function masterSeenBy(port: number): Promise<number | undefined> {
  const c = new Redis({ port, host: '127.0.0.1', lazyConnect: true, commandTimeout: 1000, connectTimeout: 1000, maxRetriesPerRequest: 0, retryStrategy: () => null });
  c.on('error', () => undefined);
  try {
    await c.connect();
    const slot = (await c.cluster('KEYSLOT', ALPHA_KEY)) as number;
    const shards = await c.cluster('SLOTS');
    return shards.find(([from, to]) => slot >= from && slot <= to)?.[2]?.[1];
  } catch {
    return undefined;
  } finally {
    c.disconnect();
  }
}

/** Alpha's master as the first of `ports` that answers sees it. */
async function masterSeenByAny(ports: readonly number[]): Promise<number | undefined> {
  for (const port of ports) {
    const master = await masterSeenBy(port);
    if (master !== undefined) return master;
  }
  return undefined;
}

/**
 * When a job enqueued now has been added, and when it is seen taken (moved to active by a worker). Its id is its own: a killed master takes its last unreplicated writes with it, the
 * queue's id counter among them, and a generated id could then name a job added before the kill (which
 * BullMQ would keep instead of adding this one).
 */
async function enqueueAndTake(i: number, timeoutMs: number): Promise<{ addedAt: number; takenAt: number }> {
  const { id } = await createEnqueue(catalog, queues)(plain, { i }, { jobId: `fs-${i}-${Date.now()}` });
  const addedAt = Date.now();
  try {
    await waitFor(async () => (await queues.get('alpha').getJob(id))?.processedOn, { timeoutMs, intervalMs: 20, what: `job ${i} (${id}) taken` });
    // When this poll saw it taken (at most one poll late), not its processedOn: a worker's fetch sent before a
    // failure and sent again after it stamps the job with the time it was first sent.
    return { addedAt, takenAt: Date.now() };
  } catch (err) {
    throw new Error(`${(err as Error).message}; ${await whereIs(id)}`);
  }
}

/** For a failure's message: what Redis says of the job, and the workers' last log lines. */
async function whereIs(id: string): Promise<string> {
  const state = await queues
    .get('alpha')
    .getJobState(id)
    .catch((err: unknown) => `unreadable (${(err as Error).message})`);
  const logs = workers.map((w, n) => `worker ${n}:\n${w.lines.slice(-25).join('\n')}`).join('\n');
  return `the job is ${state} in Redis\n${logs}`;
}

it(`every job enqueued after a promotion is taken (${FAILOVERS} failovers, freezing and killing alpha's master in turn)`, async () => {
  for (let i = 0; i < 2; i++) {
    workers.push(startApp(appEntry('worker'), { ...cluster.env, QUEUE_PREFIX: PREFIX, PORT: String(await freePort()), JOBS_MODULE, LOG_LEVEL: 'info', WORKER_CONCURRENCY: '4' }));
  }
  await Promise.all(workers.map((w, i) => w.waitForLog((l) => l.msg === 'worker ready', `worker ${i} ready`, 90_000)));

  const lines: string[] = [];
  let met = 0;
  for (let f = 0; f < FAILOVERS; f++) {
    const how = f % 2 === 0 ? 'freeze' : 'kill';
    // Idle workers that take jobs, as the were, before each failure.
    await enqueueAndTake(1000 * f, 60_000);
    const victimPort = await waitFor(() => masterSeenByAny(cluster.nodes.map((n) => n.port)), { timeoutMs: 30_000, what: "alpha's master" });
    const victim = cluster.nodes.find((n) => n.port === victimPort);
    if (!victim) throw new Error(`no node on port ${victimPort}`);
    const others = cluster.nodes.filter((n) => n !== victim).map((n) => n.port);
    const failedAt = Date.now();
    const logFrom = workers.map((w) => w.lines.length);
    if (how === 'freeze') victim.pause();
    else await victim.kill();
    // Promotion: a live node names another master for alpha's slot.
    await waitFor(
      async () => {
        const seen = await Promise.all(others.map(masterSeenBy));
        return seen.some((master) => master !== undefined && master !== victim.port);
      },
      { timeoutMs: 60_000, intervalMs: 100, what: `a replica promoted after the ${how}` },
    );
    const promotedAt = Date.now();
    const { addedAt, takenAt } = await enqueueAndTake(1000 * f + 1, 60_000);
    const afterPromotion = takenAt - promotedAt;
    const ok = afterPromotion <= TARGET_MS;
    if (ok) met++;
    const s = (ms: number) => `${(ms / 1000).toFixed(2)} s`;
    const line = `failover ${f + 1}/${FAILOVERS} (${how}): promoted ${s(promotedAt - failedAt)} after the ${how}; job added ${s(addedAt - promotedAt)} and taken ${s(afterPromotion)} after the promotion: ${ok ? 'MET' : 'NOT MET'}`;
    lines.push(line);
    console.log(line);
    // A slow take: what the workers logged from the failure on (the watchdog's heals, reconnects).
    if (!ok) console.log(workers.map((w, n) => `worker ${n}:\n${w.lines.slice(logFrom[n]).slice(-40).join('\n')}`).join('\n'));
    // The old master back as a replica of the new one, every master with a linked replica, before the next.
    if (how === 'freeze') victim.resume();
    else await victim.restart();
    await cluster.ready();
  }
  const verdict = `every job enqueued after a promotion taken within promotion + 5 s: ${met === FAILOVERS ? 'MET' : 'NOT MET'} (${met}/${FAILOVERS})`;
  console.log(verdict);
  expect(lines).toHaveLength(FAILOVERS);
  for (const w of workers) expect(w.proc.exitCode).toBeNull();
}, 120_000 + FAILOVERS * 150_000);
