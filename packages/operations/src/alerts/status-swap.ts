import type { RedisClient } from '@tickwork/core';

/** HSET only when the value changes; returns whether this call changed it and the previous value ('' if none). */
const SWAP = `
local old = redis.call('HGET', KEYS[1], ARGV[1])
if old == ARGV[2] then return {0, old} end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
return {1, old or ''}
`;

/**
 * Records the latest judged status of something (a schedule's health, Redis's memory) and says whether this
 * call changed it. However many replicas judge at once, exactly one sees each change: the one to alert.
 * Writes nothing when the status is unchanged, so it keeps working when Redis refuses writes (maxmemory).
 */
export async function swapStatus(redis: RedisClient, key: string, field: string, status: string): Promise<{ changed: boolean; previous: string | null }> {
  const [changed, previous] = (await redis.eval(SWAP, 1, key, field, status)) as [number, string];
  return { changed: changed === 1, previous: previous || null };
}
