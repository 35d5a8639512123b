import { keyspaceOn, queueStructureKey, jobKeyOf, type RedisClient } from '@tickwork/core';

/** One job to write straight into a queue's wait list. */
export interface WaitingJob {
  id: string;
  name: string;
  /** Its data, as BullMQ stores it (JSON). */
  data: string;
  timestamp: number;
}

/**
 * Writes jobs straight into a queue in BullMQ's layout, for benchmarks and tests that need a large queue
 * fast: each a job hash with the fields BullMQ's add writes for a plain job, their ids pushed on the head of
 * the wait list as BullMQ's add does, pipelined (a million in well under a minute, where BullMQ's addBulk
 * takes several). No events, no wake-up marker: nothing is waiting for them. Its layout is BullMQ's
 * (addStandardJob-9.lua, pinned in the contract).
 */
export async function fillWaiting(redis: RedisClient, prefix: string, queue: string, jobs: Iterable<WaitingJob>, batch = 5_000): Promise<void> {
  // On a cluster a queue's keys carry its tag: one slot, so each pipeline goes to one master.
  const ks = keyspaceOn(redis, prefix, queue);
  const wait = queueStructureKey(ks, queue, 'wait');
  let pipeline = redis.pipeline();
  let ids: string[] = [];
  const flush = async () => {
    if (ids.length === 0) return;
    pipeline.lpush(wait, ...ids);
    const results = (await pipeline.exec()) ?? [];
    const failed = results.find(([err]) => err);
    if (failed?.[0]) throw failed[0];
    pipeline = redis.pipeline();
    ids = [];
  };
  for (const job of jobs) {
    ids.push(job.id);
    pipeline.hset(jobKeyOf(ks, queue, job.id), 'name', job.name, 'data', job.data, 'opts', '{}', 'timestamp', String(job.timestamp), 'delay', '0', 'priority', '0');
    if (ids.length >= batch) await flush();
  }
  await flush();
}
