import type { Redis } from 'ioredis';
import { isClusterClient, type RedisClient } from '../connection.js';

/**
 * The nodes that hold keys: the client itself on one Redis, every master on a cluster (a SCAN or a
 * RANDOMKEY sees one node's keys only). Replicas hold copies, so they are left out.
 */
export function keyNodes(redis: RedisClient): Redis[] {
  return isClusterClient(redis) ? redis.nodes('master') : [redis];
}

/** Batches of the keys matching `match`, from every node that holds keys (keyNodes). */
export async function* scanKeys(redis: RedisClient, match: string, count = 1000): AsyncGenerator<string[]> {
  for (const node of keyNodes(redis)) {
    for await (const batch of node.scanStream({ match, count })) yield batch as string[];
  }
}
