import { createRedis, type ConnectionRole, type RedisClient } from '@tickwork/core';
import type { Cluster, Redis } from 'ioredis';
import { startRedisCluster, type RedisClusterHandle } from './redis-cluster.js';
import { startRedisServer, type RedisServerHandle } from './redis-server.js';

/** The two Redis deployments tickwork runs on; tests that matter on both are parametrised over these. */
export const TOPOLOGIES = ['standalone', 'cluster'] as const;
export type Topology = (typeof TOPOLOGIES)[number];

/**
 * A private Redis of either topology behind one face, so a test body is written once and run on both
 * (`describe.each(TOPOLOGIES)`): the env that points an app at it, a client, and a flush of every master.
 */
export interface TestRedis {
  topology: Topology;
  /** `REDIS_URL` for a single server, `REDIS_CLUSTER_NODES` for a cluster: what an app process needs. */
  env: Record<string, string>;
  /** The server's URL or the cluster's handle: what testkit's redisEnvOf (and helpers built on it) take. */
  where: string | RedisClusterHandle;
  /** A client of the whole deployment (an ioredis Cluster on a cluster), closed by stop(). */
  client(): Redis | Cluster;
  /** A client as the apps make it (runtime createRedis: on a cluster, with their failover budget), closed by stop(). */
  connect(role: ConnectionRole): RedisClient;
  /** Empties every key (FLUSHDB on every master of a cluster). */
  flush(): Promise<void>;
  /** The single server, when standalone. */
  server?: RedisServerHandle;
  /** The cluster's nodes (masterOf, kill, ready), when a cluster. */
  cluster?: RedisClusterHandle;
  stop(): Promise<void>;
}

export async function startTestRedis(topology: Topology, opts: { cluster?: Parameters<typeof startRedisCluster>[0] } = {}): Promise<TestRedis> {
  const made: RedisClient[] = [];
  const track = (c: RedisClient) => {
    made.push(c);
    return c;
  };
  const closeMade = () => {
    for (const c of made) c.disconnect();
  };
  if (topology === 'standalone') {
    const server = await startRedisServer();
    const admin = server.client();
    return {
      topology,
      env: { REDIS_URL: server.url },
      where: server.url,
      client: () => server.client(),
      connect: (role) => track(createRedis(server.url, role)),
      flush: async () => {
        await admin.flushdb();
      },
      server,
      stop: () => {
        closeMade();
        return server.stop();
      },
    };
  }
  const cluster = await startRedisCluster(opts.cluster);
  const admin = cluster.client();
  return {
    topology,
    env: cluster.env,
    where: cluster,
    client: () => cluster.client(),
    connect: (role) => track(createRedis(cluster.target, role)),
    async flush() {
      // FLUSHDB through a Cluster client reaches one node only: send it to every master.
      // A command first, so the client has loaded the slot map and knows the masters.
      await admin.ping();
      await Promise.all(admin.nodes('master').map((n) => n.flushdb()));
    },
    cluster,
    stop: () => {
      closeMade();
      return cluster.stop();
    },
  };
}
