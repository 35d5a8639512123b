/**
 * A cluster client disconnected and connected again at once (BullMQ's reconnectCluster, the consumer
 * watchdog's heal) comes back ready, with startup nodes given by name as Docker Compose and Kubernetes give
 * them (withSettledConnect, @tickwork/core redis/cluster-connect.ts). A bare ioredis Cluster is wedged by
 * the same steps: its connect is aborted by the late close of its own earlier connections, and it is left
 * with no node, ended or with its commands waiting for good (the bare case shows the test reaches the race).
 * A connect aborted by such a close is made again at once, not after waiting out the drain for node
 * connections it never opened. And a connect whose ready check fails (CLUSTER INFO `cluster_state:fail`, as
 * during a failover) settles once the client gets ready; a bare ioredis one never does, and BullMQ awaiting
 * it waits for good.
 * (A close of a client with no node: close-ends.test.ts, @tickwork/core.)
 */
import { createRedis } from '@tickwork/core';
import { Cluster } from 'ioredis';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { startRedisCluster, type RedisClusterHandle } from './redis-cluster.js';
import { startRedisServer } from './redis-server.js';
import { waitFor } from './wait-for.js';

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

/**
 * BullMQ's recovery of a worker's blocking client, before a wait for a job on a cluster left with no node
 * connection (after a failed ready check during a failover, `Failed to refresh slots cache`, or a close):
 * `disconnect(false)`, then `connect()` at once (connectClusterWithTimeout in its redis-connection.js).
 * That close (a client with no node is closed at once, close-ends.ts) is emitted a tick later and aborts the
 * connect after it has made its startup nodes' connections, unopened; the settled connect used to wait for
 * those to end (they never do) for its full 2.5 s before trying again: 2.6 s a round. By address, so the
 * connect takes up its nodes without a name lookup and the close reaches it every time. A round takes about
 * 0.1 s (the retry's backoff), 0.13 s beside three CPU burners on 2 cores; the bound leaves a loaded machine
 * room and is well under the 2.5 s.
 */
it("tickwork's cluster client whose connect is aborted by the close just made connects again at once", async () => {
  const client = createRedis(cluster.target, 'blocking') as Cluster;
  client.on('error', () => undefined);
  let connects = 0;
  client.on('connecting', () => connects++);
  try {
    expect(await client.ping()).toBe('PONG');
    for (let round = 0; round < 3; round++) {
      // No node connection left, reconnecting by itself, as after a failed ready check.
      client.disconnect(true);
      await new Promise((resolve) => client.once('reconnecting', resolve));
      expect(client.nodes('all')).toHaveLength(0);
      connects = 0;
      const startedAt = performance.now();
      client.disconnect(false);
      await client.connect();
      const connectMs = performance.now() - startedAt;
      expect(client.status).toBe('ready');
      // Connected more than once: the first connect was aborted (the test reaches the case it claims).
      expect(connects).toBeGreaterThanOrEqual(2);
      expect(connectMs).toBeLessThan(1500);
      expect(await within(client.ping(), 5000)).toBe('PONG');
    }
  } finally {
    client.disconnect();
  }
});

/** A one-node cluster that holds slots 0-100 only: it answers CLUSTER SLOTS, and CLUSTER INFO says `cluster_state:fail`. */
async function partialCluster(): Promise<{ port: number; cover(): Promise<void>; stop(): Promise<void> }> {
  // The node names its own address in CLUSTER SLOTS only when told it (a node alone has no peer to learn it from).
  const server = await startRedisServer({ args: ['--cluster-enabled', 'yes', '--cluster-announce-ip', '127.0.0.1', '--cluster-config-file', 'nodes.conf'] });
  const admin = server.client();
  await admin.call('CLUSTER', 'ADDSLOTSRANGE', '0', '100');
  return {
    port: server.port,
    async cover() {
      await admin.call('CLUSTER', 'ADDSLOTSRANGE', '101', '16383');
    },
    stop: () => server.stop(),
  };
}

it("a cluster's connect whose ready check fails settles once the client is ready (a bare ioredis one never does)", async () => {
  const node = await partialCluster();
  const nodes = [{ host: '127.0.0.1', port: node.port }];
  const bare = new Cluster(nodes, { lazyConnect: true, clusterRetryStrategy: () => 100 });
  const ours = createRedis({ url: `redis://127.0.0.1:${node.port}`, nodes, failoverMs: 5000 }, 'blocking') as Cluster;
  try {
    for (const c of [bare, ours]) c.on('error', () => undefined);
    const settled = { bare: 'pending', ours: 'pending' };
    bare.connect().then(() => (settled.bare = 'resolved'), (err: Error) => (settled.bare = `rejected: ${err.message}`));
    // Ours connects on creation; a second connect while it does is refused by ioredis, so it is BullMQ's
    // reconnect after a close that is made here: close it, then connect it as RedisConnection.reconnect does.
    await waitFor(() => ours.status === 'reconnecting', { what: 'our client failing its ready check' });
    ours.disconnect();
    await waitFor(() => ours.status === 'end', { what: 'our client ended' });
    ours.connect().then(() => (settled.ours = 'resolved'), (err: Error) => (settled.ours = `rejected: ${err.message}`));
    // Both go round: connect, the ready check fails, reconnect.
    await waitFor(() => bare.status === 'reconnecting' && ours.status === 'reconnecting', { what: 'both failing their ready checks' });
    await node.cover();
    await waitFor(() => bare.status === 'ready' && ours.status === 'ready', { timeoutMs: 20_000, what: 'both ready once every slot is served' });
    await waitFor(() => settled.ours !== 'pending', { what: "our connect settled" });
    expect(settled).toEqual({ bare: 'pending', ours: 'resolved' });
  } finally {
    bare.disconnect();
    ours.disconnect();
    await node.stop();
  }
});
