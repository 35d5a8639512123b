import type { RedisClient } from '../redis/connection.js';
import { defineScript, runScript } from '../redis/scripts.js';

/**
 * What the process registries share (the worker registry, worker-registry.ts, and the scheduler's, in
 * @tickwork/schedules): one sorted set per registry, each member scored by the Redis server time (ms) of its
 * last beat, so no process's clock decides who is dead. A beat writes a process's members and, in the same
 * script call, answers which members are dead and drops the ones silent for the forget-after time. One key:
 * every call reads one slot (Redis Cluster).
 *
 * Who is dead is decided in Redis, by one rule for every judge, so a process judges as soon as it beats,
 * however new: a member is dead once it has been silent for the dead-after time, counted from no earlier
 * than the moment the registry came back from an outage. An outage is a silence of the whole registry: no
 * beat from anyone for more than half the dead-after time (with several processes beating every second,
 * that is Redis down or frozen, or every process cut off or frozen). After one, every member looks silent
 * until its next beat (connections retry at least every 2 s), so the first beat back marks the registry
 * live since then (the member LIVE_SINCE_MEMBER, scored with that time) and nobody is judged dead for the
 * dead-after time; the next beat past it removes the mark. A process that was itself frozen or cut off, or
 * has just started, sees the others' fresh beats, so it judges them as any other process would.
 */

/** The registry's own member, only while it came back from an outage less than the dead-after time ago: scored with that moment. */
export const LIVE_SINCE_MEMBER = '!live-since';

/**
 * Lua functions for the scripts that judge members (the beat, a liveness check, the scheduler's adoption):
 * `latest_beat(key)`, the score of the registry's newest beat (nil when empty), and
 * `registry_silence(key, member, now, deadAfter)`: -1 when `member` is not registered; 0 while the whole
 * registry is silent (an outage: the next beat starts the count again); else how long `member` has been
 * silent, counted from no earlier than the registry's return from its last outage.
 */
export const REGISTRY_SILENCE_LUA = `local function latest_beat(key)
  local top = redis.call('ZREVRANGE', key, 0, 0, 'WITHSCORES')
  return top[2] and tonumber(top[2])
end
local function registry_silence(key, member, now, deadAfter)
  local s = redis.call('ZSCORE', key, member)
  if not s then return -1 end
  if now - latest_beat(key) > deadAfter / 2 then return 0 end
  s = tonumber(s)
  local live = redis.call('ZSCORE', key, '${LIVE_SINCE_MEMBER}')
  if live and tonumber(live) > s then s = tonumber(live) end
  return now - s
end
`;

/** Lua that sets `now` to Redis's clock, ms. */
export const REDIS_NOW_LUA = `local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
`;

/** KEYS[1] registry. ARGV: deadAfterMs, forgetAfterMs, members... Replies {now, dead member, its score, ...}. */
const BEAT_SCRIPT = defineScript(`${REGISTRY_SILENCE_LUA}${REDIS_NOW_LUA}
local deadAfter = tonumber(ARGV[1])
local latest = latest_beat(KEYS[1])
local live = redis.call('ZSCORE', KEYS[1], '${LIVE_SINCE_MEMBER}')
if latest and now - latest > deadAfter / 2 then
  live = now
  redis.call('ZADD', KEYS[1], now, '${LIVE_SINCE_MEMBER}')
elseif live and now - tonumber(live) >= deadAfter then
  redis.call('ZREM', KEYS[1], '${LIVE_SINCE_MEMBER}')
  live = nil
end
local add = {}
for i = 3, #ARGV do
  add[#add + 1] = now
  add[#add + 1] = ARGV[i]
end
if #add > 0 then redis.call('ZADD', KEYS[1], unpack(add)) end
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - tonumber(ARGV[2]))
if live then return {now} end
local dead = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', now - deadAfter, 'WITHSCORES', 'LIMIT', 0, 256)
table.insert(dead, 1, now)
return dead`);

/** KEYS[1] registry, ARGV[1] member, ARGV[2] dead-after ms: registry_silence of the member. */
const SILENCE_SCRIPT = defineScript(`${REGISTRY_SILENCE_LUA}${REDIS_NOW_LUA}
return registry_silence(KEYS[1], ARGV[1], now, tonumber(ARGV[2]))`);

/** KEYS[1] registry, ARGV members: removes them; the registry's own mark too once no process is left. */
const LEAVE_SCRIPT = defineScript(`redis.call('ZREM', KEYS[1], unpack(ARGV))
if redis.call('ZCARD', KEYS[1]) == 1 and redis.call('ZSCORE', KEYS[1], '${LIVE_SINCE_MEMBER}') then redis.call('DEL', KEYS[1]) end
return 1`);

/** A member dead by the registry's rule, as a beat found it. */
export interface SilentMember {
  member: string;
  /** The Redis time of its last beat, ms. */
  lastBeat: number;
  /** How long it has been silent by the Redis clock, ms. */
  silentMs: number;
}

/** Beats `members` into the registry `key`; answers the Redis time and the members dead by the rule above (at most 256). */
export async function beatRegistry(
  redis: RedisClient,
  key: string,
  members: readonly string[],
  timing: { deadAfterMs: number; forgetAfterMs: number },
): Promise<{ now: number; silent: SilentMember[] }> {
  const reply = (await runScript(redis, BEAT_SCRIPT, [key], [timing.deadAfterMs, timing.forgetAfterMs, ...members])) as (string | number)[];
  const now = Number(reply[0]);
  const silent: SilentMember[] = [];
  for (let i = 1; i + 1 < reply.length; i += 2) {
    const lastBeat = Number(reply[i + 1]);
    silent.push({ member: String(reply[i]), lastBeat, silentMs: now - lastBeat });
  }
  return { now, silent };
}

/** How long `member` has been silent by the rule above, ms: -1 when it is not registered, 0 during an outage. */
export async function memberSilence(redis: RedisClient, key: string, member: string, deadAfterMs: number): Promise<number> {
  return Number(await runScript(redis, SILENCE_SCRIPT, [key], [member, deadAfterMs]));
}

/** A clean stop: removes `members` from the registry `key`. */
export async function leaveRegistry(redis: RedisClient, key: string, members: readonly string[]): Promise<void> {
  if (members.length > 0) await runScript(redis, LEAVE_SCRIPT, [key], members);
}

/**
 * Whether a beat's answer is still worth acting on: it came back within half the dead-after time. A reply
 * that took longer (this process frozen, or its connection stuck, while the beat was out) says who was dead
 * then; the next beat asks again.
 */
export function freshReply(sentAt: number, deadAfterMs: number, now = performance.now()): boolean {
  return now - sentAt <= deadAfterMs / 2;
}
