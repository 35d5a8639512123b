import type { RedisClient } from '@tickwork/core';
import type { OverlapPolicy } from '@tickwork/core';

/** How many skip records are kept per schedule, and for how long after the latest skip. */
export const MAX_SKIP_RECORDS = 1000;
export const SKIP_RECORDS_TTL_MS = 30 * 24 * 3600_000;

/** A durable record of one skipped occurrence (newest first in the list). */
export interface SkipRecord {
  schedule: string;
  /** The skipped occurrence's idempotency key. */
  idempotencyKey: string;
  nominalTime: string | undefined;
  policy: OverlapPolicy;
  /** The run that was still going. */
  runningKey: string;
  /** Server time of the decision, ms. */
  at: number;
}

export type EnterOutcome =
  | { kind: 'run' }
  | { kind: 'wait'; retryInMs: number }
  | { kind: 'skip'; runningKey: string };

/**
 * Per schedule, a hash `<prefix>:overlap:{<schedule>}` names the running occurrence (with a lease, so a
 * crashed run frees the slot) and, for `buffer-one`, the one waiting. The skip list lives beside it under
 * the same hash tag, so `enter` is one atomic script on one slot.
 *
 * The rules are Lua functions so that a script of another package can include them (a scheduled run's start
 * record enters the slot in the same call on a single Redis: @tickwork/schedules lua.ts startEntering).
 * overlapEnter's arguments are enterArgs' (below), in order; it returns {'run'}, {'wait'} or {'skip', ahead}.
 */
export const OVERLAP_ENTER_FN = `
local function overlapEnter(slot, skips, policy, me, leaseMs, schedule, nominal, maxSkips, skipsTtl)
  local t = redis.call('TIME')
  local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
  leaseMs = tonumber(leaseMs)
  local f = redis.call('HMGET', slot, 'running', 'runningUntil', 'waiting', 'waitingUntil')
  local running, waiting = f[1], f[3]
  local busy = running and running ~= me and tonumber(f[2] or '0') > now
  local otherWaits = policy == 'buffer-one' and waiting and waiting ~= me and tonumber(f[4] or '0') > now
  if not busy and not otherWaits then
    if waiting == me then redis.call('HDEL', slot, 'waiting', 'waitingUntil') end
    redis.call('HSET', slot, 'running', me, 'runningUntil', string.format('%d', now + leaseMs))
    return {'run'}
  end
  if busy and policy == 'buffer-one' and not otherWaits then
    redis.call('HSET', slot, 'waiting', me, 'waitingUntil', string.format('%d', now + leaseMs))
    return {'wait'}
  end
  -- Skipped: either busy under 'skip', or another occurrence already holds the one waiting place.
  local ahead = running
  if not busy then ahead = waiting end
  redis.call('LPUSH', skips, cjson.encode({
    schedule = schedule, idempotencyKey = me, nominalTime = nominal, policy = policy, runningKey = ahead, at = now
  }))
  redis.call('LTRIM', skips, 0, tonumber(maxSkips) - 1)
  redis.call('PEXPIRE', skips, tonumber(skipsTtl))
  return {'skip', ahead}
end`;

/** Frees the slot when `me` holds it; 1 if it did. */
export const OVERLAP_LEAVE_FN = `
local function overlapLeave(slot, me)
  if redis.call('HGET', slot, 'running') ~= me then return 0 end
  redis.call('HDEL', slot, 'running', 'runningUntil')
  return 1
end`;

const ENTER = `${OVERLAP_ENTER_FN}
return overlapEnter(KEYS[1], KEYS[2], ARGV[1], ARGV[2], ARGV[3], ARGV[4], ARGV[5], ARGV[6], ARGV[7])`;

const RENEW = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
if redis.call('HGET', KEYS[1], 'running') ~= ARGV[1] then return 0 end
redis.call('HSET', KEYS[1], 'runningUntil', string.format('%d', now + tonumber(ARGV[2])))
return 1
`;

const LEAVE = `${OVERLAP_LEAVE_FN}
return overlapLeave(KEYS[1], ARGV[1])`;

/** An enter as a script of another package runs it: its keys (slot, skips) and overlapEnter's other arguments. */
export interface OverlapEnterCall {
  keys: [slot: string, skips: string];
  argv: (string | number)[];
}

type OverlapRedis = RedisClient & {
  tickworkOverlapEnter(slot: string, skips: string, ...args: (string | number)[]): Promise<string[]>;
  tickworkOverlapRenew(slot: string, me: string, leaseMs: number): Promise<number>;
  tickworkOverlapLeave(slot: string, me: string): Promise<number>;
};

/** Tries after the first when freeing a slot fails (release), each after twice the wait before (from 250 ms). */
const LEAVE_RETRIES = 6;

export class OverlapGuard {
  private readonly redis: OverlapRedis;

  constructor(
    redis: RedisClient,
    private readonly opts: { prefix: string; leaseMs: number; pollMs?: number },
  ) {
    const r = redis as OverlapRedis;
    if (typeof r.tickworkOverlapEnter !== 'function') {
      redis.defineCommand('tickworkOverlapEnter', { numberOfKeys: 2, lua: ENTER });
      redis.defineCommand('tickworkOverlapRenew', { numberOfKeys: 1, lua: RENEW });
      redis.defineCommand('tickworkOverlapLeave', { numberOfKeys: 1, lua: LEAVE });
    }
    this.redis = r;
  }

  slotKey(schedule: string): string {
    return `${this.opts.prefix}:overlap:{${schedule}}`;
  }

  skipsKey(schedule: string): string {
    return `${this.opts.prefix}:overlap:{${schedule}}:skips`;
  }

  /** An enter's keys and arguments, for a script that includes OVERLAP_ENTER_FN (enter is this script alone). */
  enterArgs(schedule: string, key: string, policy: OverlapPolicy, nominalTime: Date | undefined): OverlapEnterCall {
    return {
      keys: [this.slotKey(schedule), this.skipsKey(schedule)],
      argv: [policy, key, this.opts.leaseMs, schedule, nominalTime?.toISOString() ?? '', MAX_SKIP_RECORDS, SKIP_RECORDS_TTL_MS],
    };
  }

  /** What an overlapEnter reply means to the run. */
  outcomeOf(reply: readonly string[]): EnterOutcome {
    const [kind, ahead] = reply;
    if (kind === 'run') return { kind };
    // A waiting occurrence polls: the running one has no way to wake a delayed BullMQ job cheaply.
    if (kind === 'wait') return { kind, retryInMs: this.opts.pollMs ?? 500 };
    return { kind: 'skip', runningKey: ahead ?? '' };
  }

  /** Decides whether the occurrence `key` of `schedule` may run now. `skip` outcomes are already recorded. */
  async enter(schedule: string, key: string, policy: OverlapPolicy, nominalTime: Date | undefined): Promise<EnterOutcome> {
    const { keys, argv } = this.enterArgs(schedule, key, policy, nominalTime);
    return this.outcomeOf(await this.redis.tickworkOverlapEnter(...keys, ...argv));
  }

  async renew(schedule: string, key: string): Promise<boolean> {
    return (await this.redis.tickworkOverlapRenew(this.slotKey(schedule), key, this.opts.leaseMs)) === 1;
  }

  async leave(schedule: string, key: string): Promise<boolean> {
    return (await this.redis.tickworkOverlapLeave(this.slotKey(schedule), key)) === 1;
  }

  /**
   * Frees the slot `key` holds, as a run's end does. A leave that fails (a command deadline on a loaded
   * machine, a failover) is tried again in the background, backing off over about 16 s: a slot left held
   * would have the schedule's next occurrence skipped as overlapping a run that had ended, until the slot's
   * lease ran out. Resolves after the first try, never rejects.
   */
  async release(schedule: string, key: string): Promise<void> {
    const left = () => this.leave(schedule, key).then(
      () => true,
      () => false,
    );
    if (await left()) return;
    void (async () => {
      for (let attempt = 0; attempt < LEAVE_RETRIES; attempt++) {
        await new Promise((resolve) => setTimeout(resolve, 250 * 2 ** attempt).unref());
        if (await left()) return;
      }
    })();
  }

  /** The most recent skips of a schedule, newest first. */
  async skips(schedule: string, limit = 100): Promise<SkipRecord[]> {
    const raw = await this.redis.lrange(this.skipsKey(schedule), 0, limit - 1);
    return raw.map((r) => {
      const rec = JSON.parse(r) as SkipRecord;
      return { ...rec, nominalTime: rec.nominalTime || undefined };
    });
  }
}
