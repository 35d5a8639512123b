import type { RedisClient } from '../redis/connection.js';

/**
 * Every queue tickwork has ever served, kept in Redis. Reconciliation reads it so a queue whose last job
 * was deleted from the catalog still gets its ghost schedulers removed, and operator tools (DLQ,
 * dashboard) find queues the running catalog no longer names.
 */
export function queueRegistryKey(prefix: string): string {
  return `${prefix}:meta:queues`;
}

export async function registerQueues(redis: RedisClient, prefix: string, queues: readonly string[]): Promise<void> {
  if (queues.length > 0) await redis.sadd(queueRegistryKey(prefix), ...queues);
}

export async function knownQueues(redis: RedisClient, prefix: string): Promise<string[]> {
  return (await redis.smembers(queueRegistryKey(prefix))).sort();
}
