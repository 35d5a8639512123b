import type { RedisClient } from './connection.js';

/**
 * Where a queue's keys live: ONE rule, used by everything that names a key of a queue or of its runs.
 *
 * - One Redis: exactly the layout tickwork always had. BullMQ's keys are `<prefix>:<queue>:...`, the
 *   ledger's `<prefix>:ledger:<key>`.
 * - Redis Cluster: every queue gets its own hash tag, its base name in braces, shared by its DLQ
 *   (`billing.dlq` uses `billing`'s tag). BullMQ's prefix becomes `<prefix>:{billing}` (keys
 *   `<prefix>:{billing}:billing:wait`, `<prefix>:{billing}:billing.dlq:...`), and the records written with
 *   a run's completion (ledger, step results) use the same tagged base (`<prefix>:{billing}:ledger:<key>`).
 *   So BullMQ's scripts stay on one slot, queues spread over the masters, and a result written ahead of
 *   BullMQ's acknowledgement goes to the same node, on the same connection, as the acknowledgement (the
 *   ordering argument of ledger-batch.ts). The price: on a cluster an idempotency key is scoped to its queue.
 *
 * The queue's *name* is unchanged in both layouts (metrics, dashboard, CLI, job ids).
 */
export interface QueueKeyspace {
  /** The `prefix` option of BullMQ's Queue and Worker for this queue. */
  bullPrefix: string;
  /** The base of tickwork's keys that belong to this queue's runs (ledger records, step results). */
  runPrefix: string;
}

/** The suffix naming a queue's dead-letter queue (queues.ts `dlqName`). */
export const DLQ_SUFFIX = '.dlq';

/** The queue whose tag `queue` shares: itself, or for a DLQ the queue it receives failures from. */
export function queueBase(queue: string): string {
  return queue.endsWith(DLQ_SUFFIX) ? queue.slice(0, -DLQ_SUFFIX.length) : queue;
}

/** One Redis's keyspace per prefix, made once: it is asked for on every job, and is the same for every queue. */
const single = new Map<string, QueueKeyspace>();

export function queueKeyspace(prefix: string, queue: string, clustered: boolean): QueueKeyspace {
  if (!clustered) {
    let ks = single.get(prefix);
    if (!ks) single.set(prefix, (ks = Object.freeze({ bullPrefix: prefix, runPrefix: prefix })));
    return ks;
  }
  const tagged = `${prefix}:{${queueBase(queue)}}`;
  return { bullPrefix: tagged, runPrefix: tagged };
}

/** queueKeyspace for the layout `redis` implies (a cluster client uses the clustered one). */
export function keyspaceOn(redis: RedisClient, prefix: string, queue: string): QueueKeyspace {
  return queueKeyspace(prefix, queue, redis.isCluster);
}

/** The hash of BullMQ job `jobId` of `queue` (`<bull prefix>:<queue>:<id>`). */
export function jobKeyOf(ks: QueueKeyspace, queue: string, jobId: string): string {
  return `${ks.bullPrefix}:${queue}:${jobId}`;
}

/** A key of BullMQ structure `suffix` of `queue` (`wait`, `meta`, `failed`...). */
export function queueStructureKey(ks: QueueKeyspace, queue: string, suffix: string): string {
  return `${ks.bullPrefix}:${queue}:${suffix}`;
}
