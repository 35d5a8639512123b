import type { RedisClient } from '@tickwork/core';
import { parseDef, type StoredDef } from './definition.js';
import { ScheduleShardsMismatchError } from '../errors.js';
import { historyKeysOf, jobIndexKey, SCHEDULE_SHARDS, scheduleShardsKey, shardKeys, shardOf } from './shard-keys.js';

/** What the store reads about one schedule in one round trip. */
export interface ScheduleState {
  raw: string | null;
  def: StoredDef | null;
  /** Its due score, or null (claimed right now, or exhausted). */
  due: number | null;
  /** The nominal of an in-flight claim, if a dispatcher holds one. */
  inflight: number | null;
}

export async function readState(redis: RedisClient, prefix: string, id: string): Promise<ScheduleState> {
  const sk = shardKeys(prefix, shardOf(id));
  const [[, raw], [, due], [, inf]] = ((await redis.pipeline().hget(sk.defs, id).zscore(sk.due, id).hget(sk.inflight, id).exec()) ?? []) as [
    unknown,
    string | null,
  ][] as [[unknown, string | null], [unknown, string | null], [unknown, string | null]];
  return {
    raw,
    def: raw ? parseDef(raw) : null,
    due: due === null ? null : Number(due),
    inflight: inf ? Number(inf.split(':')[0]) : null,
  };
}

/** SET_DEF's keys for schedule `id` whose job index is `job` (and was `previousJob`). */
export function setDefKeys(prefix: string, id: string, job: string, previousJob: string): string[] {
  const shard = shardOf(id);
  const sk = shardKeys(prefix, shard);
  const h = historyKeysOf(prefix, id);
  return [sk.defs, sk.due, sk.claimed, sk.inflight, sk.ids, jobIndexKey(prefix, shard, job), jobIndexKey(prefix, shard, previousJob), h.history, h.records, h.lastSuccess, h.lastFailure, sk.notAhead];
}

export function deleteDefKeys(prefix: string, id: string, job: string): string[] {
  const shard = shardOf(id);
  const sk = shardKeys(prefix, shard);
  return [sk.defs, sk.due, sk.claimed, sk.inflight, sk.ids, jobIndexKey(prefix, shard, job), sk.watch, sk.stale, sk.notAhead];
}

const checked = new WeakMap<RedisClient, Set<string>>();

/**
 * Records SCHEDULE_SHARDS for the prefix on first use and refuses to go on when another value is recorded:
 * a different shard count would look for every schedule in the wrong shard.
 */
export async function ensureShards(redis: RedisClient, prefix: string): Promise<void> {
  let seen = checked.get(redis);
  if (seen?.has(prefix)) return;
  const key = scheduleShardsKey(prefix);
  await redis.set(key, String(SCHEDULE_SHARDS), 'NX');
  const recorded = Number(await redis.get(key));
  if (recorded !== SCHEDULE_SHARDS) throw new ScheduleShardsMismatchError(recorded, SCHEDULE_SHARDS);
  if (!seen) checked.set(redis, (seen = new Set()));
  seen.add(prefix);
}
