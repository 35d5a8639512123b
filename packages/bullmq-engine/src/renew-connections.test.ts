/**
 * renewWorkerConnections (the worker's consumer watchdog heals with it): a running BullMQ Worker's two
 * connections, its commands' and its blocking one, are dropped and made anew, through BullMQ's public
 * backend getters only, and the Worker takes jobs after it as before. And what a consumer is doing, as the
 * watchdog logs it (consumerState).
 */
import { createRedis } from '@tickwork/core';
import { startRedisServer, waitFor, type RedisServerHandle } from '@tickwork/testkit';
import { Queue, Worker } from 'bullmq';
import type { Redis } from 'ioredis';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { consumerState } from './worker/consumer-state.js';
import { fetchCallsOf, trackFetchCalls } from './worker/fetch-calls.js';
import { renewWorkerConnections } from './worker/renew-connections.js';

let server: RedisServerHandle;
let admin: Redis;

beforeAll(async () => {
  server = await startRedisServer();
  admin = server.client();
});
afterAll(async () => {
  await server?.stop();
});

/** The ids of every client connected now but `admin`. */
async function clientIds(): Promise<Set<string>> {
  const own = String(await admin.client('ID'));
  const list = (await admin.client('LIST')) as string;
  return new Set(list.split('\n').flatMap((l) => /\bid=(\d+)/.exec(l)?.[1] ?? []).filter((id) => id !== own));
}

it("renews a Worker's command and blocking connections, and the Worker takes jobs after it", async () => {
  const connection = createRedis(server.url, 'blocking');
  const producer = createRedis(server.url, 'command');
  const queue = new Queue('renew', { connection: producer });
  const done: string[] = [];
  const worker = new Worker('renew', async (job) => void done.push(String(job.id)), { connection });
  try {
    await worker.waitUntilReady();
    const first = await queue.add('x', {});
    await waitFor(() => done.includes(String(first.id)), { what: 'the first job run' });
    const before = await clientIds();

    expect(await renewWorkerConnections(worker)).toBe(2);
    await waitFor(async () => [...(await clientIds())].filter((id) => !before.has(id)).length >= 2, { what: 'two new connections' });

    const second = await queue.add('x', {});
    await waitFor(() => done.includes(String(second.id)), { timeoutMs: 30_000, what: 'a job run after the renewal' });
  } finally {
    await worker.close();
    await queue.close();
    connection.disconnect();
    producer.disconnect();
  }
});

it("with wake, adds the queue's wake-up marker after renewing, so a ready job whose marker a closed wait took is fetched", async () => {
  const connection = createRedis(server.url, 'blocking');
  const producer = createRedis(server.url, 'command');
  const queue = new Queue('wake', { connection: producer });
  const done: string[] = [];
  // Not running yet: no wait of its own pops the marker before it is read here.
  const worker = new Worker('wake', async (job) => void done.push(String(job.id)), { connection, autorun: false });
  try {
    await worker.waitUntilReady();
    const job = await queue.add('x', {});
    // The marker its add left, as if a wait the renewal closed had popped it and its reply was lost.
    await admin.del(worker.toKey('marker'));
    await renewWorkerConnections(worker);
    expect(await admin.zscore(worker.toKey('marker'), '0')).toBeNull();
    await renewWorkerConnections(worker, { wake: true });
    expect(await admin.zscore(worker.toKey('marker'), '0')).toBe('0');
    void worker.run();
    await waitFor(() => done.includes(String(job.id)), { timeoutMs: 30_000, what: 'the ready job run' });
  } finally {
    await worker.close();
    await queue.close();
    connection.disconnect();
    producer.disconnect();
  }
});

it("names the backend call an idle Worker's fetch awaits (its wait for a job), and how long, in its consumer state", async () => {
  const connection = createRedis(server.url, 'blocking');
  const worker = trackFetchCalls(new Worker('idle-state', async () => undefined, { connection }));
  try {
    await worker.waitUntilReady();
    await waitFor(() => fetchCallsOf(worker).some((c) => c.call === 'waitForJob'), { what: "the Worker's wait for a job" });
    const state = await consumerState(worker);
    expect(state.fetchCalls).toEqual([{ call: 'waitForJob', forMs: expect.any(Number) }]);
    expect(state.blocking).toMatchObject({ status: 'ready' });
  } finally {
    await worker.close();
    connection.disconnect();
  }
});
