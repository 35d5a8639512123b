import type { RedisClient } from '@tickwork/core';
import { StaleFencingTokenError } from './errors.js';

/**
 * The resource side of fencing, for state kept in Redis: a hash holding the value and the highest
 * fencing token that has written it. A write with an older token is refused atomically. Any store can
 * do the same (SQL: `UPDATE ... SET v = $1, fence = $2 WHERE id = $3 AND fence <= $2`); what matters is
 * that the check and the write are one atomic operation at the resource, not in the lock holder.
 */
const FENCED_SET = `
local latest = tonumber(redis.call('HGET', KEYS[1], 'fence') or '0')
if tonumber(ARGV[1]) < latest then return latest end
redis.call('HSET', KEYS[1], 'fence', ARGV[1], 'value', ARGV[2])
return -1
`;

type FencingRedis = RedisClient & { tickworkFencedSet(key: string, token: number, value: string): Promise<number> };

export async function fencedSet(redis: RedisClient, key: string, fencingToken: number, value: string): Promise<void> {
  const r = redis as FencingRedis;
  if (typeof r.tickworkFencedSet !== 'function') redis.defineCommand('tickworkFencedSet', { numberOfKeys: 1, lua: FENCED_SET });
  const latest = await r.tickworkFencedSet(key, fencingToken, value);
  if (latest !== -1) throw new StaleFencingTokenError(key, fencingToken, latest);
}

export async function fencedGet(redis: RedisClient, key: string): Promise<{ value: string; fence: number } | undefined> {
  const [value, fence] = await redis.hmget(key, 'value', 'fence');
  return value === null || value === undefined ? undefined : { value, fence: Number(fence) };
}
