import type { RedisClient } from '../redis/connection.js';
import { defineScript, runScript } from '../redis/scripts.js';

/**
 * What the process registries share (the worker registry, worker-registry.ts, and the scheduler's, in
 * @tickwork/schedules): one sorted set per registry, each member scored by the Redis server time (ms) of its
 * last beat, so no process's clock decides who is dead. A beat writes a process's members and, in the same
 * script call, answers which members have been silent for the dead-after time and drops the ones silent for
 * the forget-after time. One key: every call reads one slot (Redis Cluster).
 */

/** KEYS[1] registry. ARGV: deadAfterMs, forgetAfterMs, members... Replies {now, silent member, its score, ...}. */
const BEAT_SCRIPT = defineScript(`local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local add = {}
for i = 3, #ARGV do
  add[#add + 1] = now
  add[#add + 1] = ARGV[i]
end
if #add > 0 then redis.call('ZADD', KEYS[1], unpack(add)) end
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - tonumber(ARGV[2]))
local dead = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', now - tonumber(ARGV[1]), 'WITHSCORES', 'LIMIT', 0, 256)
table.insert(dead, 1, now)
return dead`);

/** A member silent for the dead-after time or more, as a beat found it. */
export interface SilentMember {
  member: string;
  /** The Redis time of its last beat, ms. */
  lastBeat: number;
  /** How long it has been silent by the Redis clock, ms. */
  silentMs: number;
}

/** Beats `members` into the registry `key`; answers the Redis time and the members silent for `deadAfterMs` (at most 256). */
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

/**
 * Whether a process sees the registry continuously: it beat within half the dead-after time, without a longer
 * gap, for at least the dead-after time. Only then may it judge others dead: after its own freeze, or an
 * outage of Redis or of its network, every other member looks silent until their next beats, and a process
 * that came back first must not take over everyone's work.
 */
export class Continuity {
  private lastBeat: number | undefined;
  private seeingSince = 0;

  constructor(private readonly deadAfterMs: number) {}

  /** A beat answered at `t` (performance.now()). */
  beat(t = performance.now()): void {
    if (this.lastBeat === undefined || t - this.lastBeat > this.deadAfterMs / 2) this.seeingSince = t;
    this.lastBeat = t;
  }

  sees(now = performance.now()): boolean {
    return this.lastBeat !== undefined && now - this.lastBeat <= this.deadAfterMs / 2 && now - this.seeingSince >= this.deadAfterMs;
  }
}
