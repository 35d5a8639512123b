import type { RedisClient } from './connection.js';
import { TickworkError } from '../errors.js';
import { dlqName } from '../queue/queues.js';
import { knownQueues } from '../queue/registry.js';
import { pipelineBySlot, type SlotCommand } from './by-slot.js';
import { queueKeyspace, queueStructureKey } from './keyspace.js';

/** The README section a refused start points to. */
export const MIGRATION_SECTION = 'README, "Moving from one Redis to a cluster"';

/** `<prefix>:meta:layout`: which key layout (redis/keyspace.ts) the prefix's data is written in, `single` or `cluster`. */
export function layoutKey(prefix: string): string {
  return `${prefix}:meta:layout`;
}

export type KeyLayout = 'single' | 'cluster';

/** The data under QUEUE_PREFIX is in a key layout this app cannot use; the message names the keys and what to do. */
export class KeyLayoutError extends TickworkError {
  override name = 'KeyLayoutError';
}

/**
 * Refuses to start on data written in the other key layout, instead of running beside it unseen (jobs
 * waiting under the old keys would never run; an idempotency key recorded there would not suppress a
 * duplicate). Two signs:
 * - the layout marker (`<prefix>:meta:layout`) says the other layout;
 * - on a cluster, a queue of the catalog (or one registered in Redis) has keys in the single-Redis layout
 *   (`<prefix>:<queue>:meta` or `:id`): data copied over from one Redis.
 * On a cluster the marker is written once found clean. On one Redis it is only read, so a single Redis's
 * keys stay exactly as they always were.
 */
export async function checkKeyLayout(redis: RedisClient, prefix: string, queues: readonly string[]): Promise<void> {
  const mode: KeyLayout = redis.isCluster ? 'cluster' : 'single';
  const key = layoutKey(prefix);
  const marked = await redis.get(key);
  if (marked !== null && marked !== mode) {
    const here = mode === 'cluster' ? 'a Redis Cluster (REDIS_CLUSTER_NODES)' : 'one Redis (REDIS_URL)';
    throw new KeyLayoutError(
      `the data under QUEUE_PREFIX="${prefix}" is in the ${marked} key layout (${key} = ${marked}), but this app runs on ${here}; ` +
        `point it at the Redis the data is on, or use another QUEUE_PREFIX, or move the work over as described in the ${MIGRATION_SECTION}`,
    );
  }
  if (mode === 'single') return;
  const all = [...new Set([...queues, ...(await knownQueues(redis, prefix))])];
  const single = all.flatMap((q) => [q, dlqName(q)]).flatMap((q) => ['meta', 'id'].map((s) => queueStructureKey(queueKeyspace(prefix, q, false), q, s)));
  const replies = await pipelineBySlot(redis, single.map((k): SlotCommand => ['exists', k]));
  const found = single.filter((_, i) => replies[i]?.[1] === 1);
  if (found.length > 0) {
    const shown = found.slice(0, 6).join(', ') + (found.length > 6 ? `, and ${found.length - 6} more` : '');
    throw new KeyLayoutError(
      `found queue keys of the single-Redis layout on this Redis Cluster (${shown}) under QUEUE_PREFIX="${prefix}": on a cluster each queue's keys are under its own hash tag (${prefix}:{<queue>}:...), ` +
        `so these jobs would never run. Drain them on the Redis they came from, or delete them, as described in the ${MIGRATION_SECTION}`,
    );
  }
  await redis.set(key, mode, 'NX');
}
