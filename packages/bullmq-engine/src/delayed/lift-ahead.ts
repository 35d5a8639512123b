import { defineScript, runScript, type Logger, type QueueSet, type Script } from '@tickwork/core';
import { checkContract } from '../contract/check.js';
import { CONTRACT } from '../contract/contract.js';
import { bullmqLua } from '../lua/bullmq-includes.js';

/**
 * Jobs added ahead of their time as BullMQ delayed jobs, moved at their time to the head of the wait list,
 * where a `lifo` add puts a job (the scheduler's occurrences: a delayed job BullMQ promotes goes to the back,
 * behind any backlog). Each queue keeps the jobs to move in a sorted set of its own (`<queue key>:tickwork-ahead`,
 * in the queue's slot), scored by the time to move them; whoever lifts a queue moves every job due by then.
 */

/**
 * Moves the queue's jobs due by ARGV[2] in its ahead set (at most ARGV[3]) as BullMQ's promote-9.lua moves
 * one, with RPUSH where it pushes to the back, and its `delay` set to the time it spent delayed (BullMQ's
 * promotion sets 0), so that the time it then waits (processedOn - timestamp - delay) counts from its lift.
 * A job no longer in the delayed set (promoted by BullMQ, cancelled, removed) only leaves the ahead set. KEYS: ahead, delayed, wait, meta, active, events, marker,
 * prioritized, pc. ARGV: the job key prefix (queue.toKey('')), now (ms), max. Returns {moved, taken}.
 */
const LIFT_SOURCE = `
local rcall = redis.call
--- @include "includes/addJobInTargetList"
--- @include "includes/addJobWithPriority"
--- @include "includes/isQueuePausedOrMaxed"
local ids = rcall("ZRANGEBYSCORE", KEYS[1], "-inf", ARGV[2], "LIMIT", 0, tonumber(ARGV[3]))
if #ids == 0 then return {0, 0} end
rcall("ZREM", KEYS[1], unpack(ids))
local isPausedOrMaxed = isQueuePausedOrMaxed(KEYS[4], KEYS[5])
local now = tonumber(ARGV[2])
local moved = 0
for _, jobId in ipairs(ids) do
  if rcall("ZREM", KEYS[2], jobId) == 1 then
    local jobKey = ARGV[1] .. jobId
    local f = rcall("HMGET", jobKey, "priority", "timestamp")
    local priority = tonumber(f[1]) or 0
    if priority == 0 then
      addJobInTargetList(KEYS[3], KEYS[7], "RPUSH", isPausedOrMaxed, jobId)
    else
      addJobWithPriority(KEYS[7], KEYS[8], priority, jobId, KEYS[9], isPausedOrMaxed)
    end
    rcall("XADD", KEYS[6], "*", "event", "waiting", "jobId", jobId, "prev", "delayed")
    rcall("HSET", jobKey, "delay", math.max(0, now - (tonumber(f[2]) or now)))
    moved = moved + 1
  end
end
return {moved, #ids}
`;

/** Jobs per call: bounds one call's time in Redis (a herd's lift is many calls, other clients' commands between them). */
export const LIFT_CHUNK = 1000;

/** The lift of one QueueSet's queues (the scheduler's AheadLift, dispatch/lift-lane.ts in @tickwork/schedules). */
export interface LiftAhead {
  /** Notes jobs of the queue `name`, added as delayed jobs, to move to the head of its wait list at `at` (ms). */
  note(name: string, jobs: readonly { id: string; at: number }[]): Promise<void>;
  /** Moves the queue's noted jobs due by `now`; resolves to how many moved. */
  lift(name: string, now?: number): Promise<number>;
}

let script: Script | undefined;


/**
 * The lift, when the installed BullMQ matches tickwork's contract (contract/contract.ts: promote-9.lua and
 * the includes the lift uses); undefined, with a line in the log, when it does not. Without it a caller
 * adds occurrences at their time rather than ahead (the scheduler's SCHEDULE_ADD_AHEAD_MS). A job noted
 * and never lifted (every scheduler stopped) is promoted by BullMQ itself at its delay, to the back of the
 * wait list.
 */
export function createLiftAhead(queues: QueueSet, log: Logger): LiftAhead | undefined {
  const mismatches = checkContract(CONTRACT);
  if (mismatches.length > 0) {
    log.warn({ mismatches: mismatches.map((m) => m.name) }, "the installed BullMQ does not match tickwork's contract: scheduled occurrences are added at their time, not ahead (docs/upgrading-bullmq.md)");
    return undefined;
  }
  script ??= defineScript(bullmqLua(LIFT_SOURCE));
  const lua = script;
  const aheadKey = (name: string) => queues.get(name).toKey('tickwork-ahead');
  return {
    async note(name, jobs) {
      if (jobs.length === 0) return;
      const args: (string | number)[] = [];
      for (const j of jobs) args.push(j.at, j.id);
      await queues.redis.zadd(aheadKey(name), ...args);
    },
    async lift(name, now = Date.now()) {
      const queue = queues.get(name);
      const k = queue.keys;
      const keys = [aheadKey(name), ...[k.delayed, k.wait, k.meta, k.active, k.events, k.marker, k.prioritized, k.pc].map(String)];
      const prefix = queue.toKey('');
      let moved = 0;
      for (;;) {
        const [n, taken] = (await runScript(queues.redis, lua, keys, [prefix, now, LIFT_CHUNK])) as [number, number];
        moved += n;
        if (taken < LIFT_CHUNK) return moved;
      }
    },
  };
}
