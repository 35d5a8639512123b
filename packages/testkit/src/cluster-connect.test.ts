/**
 * A cluster client disconnected and connected again at once (BullMQ's reconnectCluster, the consumer
 * watchdog's heal) comes back ready, with startup nodes given by name as Docker Compose and Kubernetes give
 * them (withSettledConnect, @tickwork/core redis/cluster-connect.ts). A bare ioredis Cluster is wedged by
 * the same steps: its connect is aborted by the late close of its own earlier connections, and it is left
 * with no node, ended or with its commands waiting for good (the bare case shows the test reaches the race).
 * (A close of a client with no node: close-ends.test.ts, @tickwork/core.)
 */
import { createRedis } from '@tickwork/core';
import { Cluster } from 'ioredis';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { startRedisCluster, type RedisClusterHandle } from './redis-cluster.js';

let cluster: RedisClusterHandle;

beforeAll(async () => {
  cluster = await startRedisCluster();
  await cluster.ready();
}, 120_000);
afterAll(async () => {
  await cluster?.stop();
});

const byName = () => cluster.nodes.map((n) => ({ host: 'localhost', port: n.port }));

/** What `p` settles with, as text, or 'no reply' after `ms` (a wedged client never answers, nor ends). */
const within = <T>(p: Promise<T>, ms: number) =>
  Promise.race([p.then(String, (err: Error) => `error: ${err.message}`), new Promise<string>((resolve) => setTimeout(() => resolve('no reply'), ms).unref())]);

it('a bare ioredis Cluster reconnected at once is wedged: its connect is aborted and it does not answer again', async () => {
  const bare = new Cluster(byName(), { redisOptions: { maxRetriesPerRequest: null } });
  bare.on('error', () => undefined);
  try {
    expect(await bare.ping()).toBe('PONG');
    bare.disconnect(false);
    await expect(bare.connect()).rejects.toThrow(/Connection is aborted|None of startup nodes/);
    // Ended, or closed with its commands queued for good: either way it does not come back by itself.
    expect(await within(bare.ping(), 2000)).not.toBe('PONG');
  } finally {
    bare.disconnect();
  }
});

it("tickwork's cluster client reconnected at once is ready again, answers, and ends when closed", async () => {
  const client = createRedis({ ...cluster.target, nodes: byName() }, 'blocking') as Cluster;
  client.on('error', () => undefined);
  try {
    expect(await client.ping()).toBe('PONG');
    for (let round = 0; round < 3; round++) {
      client.disconnect(false);
      await client.connect();
      expect(client.status).toBe('ready');
      expect(await within(client.ping(), 5000)).toBe('PONG');
    }
    // What BullMQ awaits to close a blocking connection: its `end`.
    const ended = new Promise<string>((resolve) => client.once('end', () => resolve('end')));
    client.disconnect();
    expect(await within(ended, 5000)).toBe('end');
  } finally {
    client.disconnect();
  }
});

