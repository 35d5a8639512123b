import calculateSlot from 'cluster-key-slot';
import type { RedisClient } from './connection.js';

/**
 * Redis Cluster runs a pipeline, a script or a multi-key command only when all its keys share one slot
 * (Redis 7 refuses cross-slot keys even in a script that does not declare them). The ONE place that splits
 * work per slot: on one Redis nothing is split (one group, one pipeline, as fast as before).
 */

/** The cluster hash slot of `key` (honouring its {hash tag}). */
export function slotOf(key: string): number {
  return calculateSlot(key);
}

/**
 * The first of `keys` outside `anchor`'s slot, with the hash tag `anchor` carries (`{billing}`, or '' if
 * none), for an error telling the caller which tag to give the key; undefined when all share the slot.
 */
export function keyOutsideSlot(anchor: string, keys: readonly string[]): { key: string; tag: string } | undefined {
  const slot = calculateSlot(anchor);
  const key = keys.find((k) => calculateSlot(k) !== slot);
  return key === undefined ? undefined : { key, tag: /\{([^}]*)\}/.exec(anchor)?.[0] ?? '' };
}

/** `items` grouped by the slot of `keyOf(item)`, each group in its original order. One group on one Redis. */
export function groupBySlot<T>(redis: RedisClient, items: readonly T[], keyOf: (item: T) => string): T[][] {
  if (!redis.isCluster || items.length <= 1) return items.length === 0 ? [] : [items as T[]];
  const groups = new Map<number, T[]>();
  for (const item of items) {
    const slot = calculateSlot(keyOf(item));
    let group = groups.get(slot);
    if (!group) groups.set(slot, (group = []));
    group.push(item);
  }
  return [...groups.values()];
}

/** A command for pipelineBySlot: its name and arguments (by default the first argument is the key it routes by). */
export type SlotCommand = [command: string, ...args: (string | number | Buffer)[]];

/** The key a command is routed by: its first argument (`keyOf` overrides it, e.g. for EVALSHA). */
const firstArgument = (c: SlotCommand): string => String(c[1]);

/** One pipeline reply per command: [error, value], as ioredis's `exec()`. */
export type PipelineReply = [Error | null, unknown];

/**
 * Sends `commands` as one pipeline per slot (all at once) and returns the replies in the order of
 * `commands`. On one Redis: one pipeline. A command whose other keys lie in another slot is the caller's
 * mistake (Redis answers CROSSSLOT).
 */
export async function pipelineBySlot(redis: RedisClient, commands: readonly SlotCommand[], keyOf: (c: SlotCommand) => string = firstArgument): Promise<PipelineReply[]> {
  if (commands.length === 0) return [];
  if (!redis.isCluster) return ((await redis.pipeline(commands as unknown as string[][]).exec()) ?? []) as PipelineReply[];
  const indexed = commands.map((command, i) => ({ command, i }));
  const out: PipelineReply[] = new Array<PipelineReply>(commands.length);
  await Promise.all(
    groupBySlot(redis, indexed, (c) => keyOf(c.command)).map(async (group) => {
      const replies = ((await redis.pipeline(group.map((c) => c.command) as unknown as string[][]).exec()) ?? []) as PipelineReply[];
      group.forEach((c, j) => (out[c.i] = replies[j] ?? [new Error('no reply from its pipeline'), null]));
    }),
  );
  return out;
}

/** pipelineBySlot, throwing the first error: for reads whose every reply is needed. */
export async function readBySlot(redis: RedisClient, commands: readonly SlotCommand[], keyOf?: (c: SlotCommand) => string): Promise<unknown[]> {
  return (await pipelineBySlot(redis, commands, keyOf)).map(([err, value]) => {
    if (err) throw err;
    return value;
  });
}
