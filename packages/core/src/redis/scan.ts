import type { Redis } from 'ioredis';
import { isClusterClient, type RedisClient } from './connection.js';
import { TickworkError } from '../errors.js';

/**
 * The nodes that hold keys: the client itself on one Redis, every master on a cluster (a SCAN or a
 * RANDOMKEY sees one node's keys only). Replicas hold copies, so they are left out. A cluster client
 * knows its masters once connected: a command is sent first if it is not yet (it waits in the offline
 * queue until the client is ready).
 */
export async function keyNodes(redis: RedisClient): Promise<Redis[]> {
  if (!isClusterClient(redis)) return [redis];
  if (redis.status !== 'ready') await redis.ping();
  const masters = redis.nodes('master');
  if (masters.length === 0) throw new TickworkError('the Redis Cluster client knows no master node (REDIS_CLUSTER_NODES)');
  return masters;
}

/** Batches of the keys matching `match`, from every node that holds keys (keyNodes). As SCAN, a key may come more than once. */
export async function* scanKeys(redis: RedisClient, match: string, count = 1000): AsyncGenerator<string[]> {
  for (const node of await keyNodes(redis)) {
    for await (const batch of node.scanStream({ match, count })) yield batch as string[];
  }
}
