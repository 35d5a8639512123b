import { defineScript, runScript, type RedisClient } from '@tickwork/core';

/**
 * What the worker's recovery needs of BullMQ's stall bookkeeping, which BullMQ keeps in the job's hash
 * (`stc`: stalls counted, `defa`: a deferred failure, `rjk`: a job scheduler's job) and its lock key
 * (`<job key>:lock`, holding the token of the Worker that has the job). BullMQ's stalled check
 * (moveStalledJobsToWait) counts and fails stalls this way; these functions do the same for the stalls
 * tickwork finds sooner (a dead process's jobs) and reset the count when a run makes progress. The contract
 * (contract/contract.ts) pins the BullMQ scripts whose fields these are.
 */

/** BullMQ's own wording, so a dead letter reads the same whichever check counted the last stall. */
export const STALLED_REASON = 'job stalled more than allowable limit';

/**
 * Counts one stall of a job as BullMQ's stalled check does (`stc`; past maxStalledCount a deferred failure,
 * `defa`, so the job fails when next taken; a `stalled` event), only while `token` still holds the job's
 * lock. KEYS: job hash, its lock, the queue's events. ARGV: token, maxStalledCount, reason, job id. Replies
 * the new count, or 0 when the token no longer holds the lock. Jobs of BullMQ job schedulers are not
 * failed, as in BullMQ.
 */
const COUNT_STALL = defineScript(`if redis.call('GET', KEYS[2]) ~= ARGV[1] then return 0 end
local stalled = redis.call('HINCRBY', KEYS[1], 'stc', 1)
if stalled > tonumber(ARGV[2]) and not redis.call('HGET', KEYS[1], 'rjk') then
  redis.call('HSET', KEYS[1], 'defa', ARGV[3])
end
redis.call('XADD', KEYS[3], '*', 'event', 'stalled', 'jobId', ARGV[4])
return stalled`);

/** Resets BullMQ's stall count (`stc`) only while `token` still holds the job's lock. KEYS: job hash, its lock. ARGV: token. */
const RESET_STALLS = defineScript(`if redis.call('GET', KEYS[2]) == ARGV[1] and redis.call('EXISTS', KEYS[1]) == 1 then
  redis.call('HSET', KEYS[1], 'stc', 0)
  return 1
end
return 0`);

/** The key of a job's BullMQ lock. */
export function lockKeyOf(jobKey: string): string {
  return `${jobKey}:lock`;
}

/**
 * Counts a stall on job `jobId` (its hash at `jobKey`, its queue's events at `eventsKey`) while `token` holds
 * it: the new count, or 0 when it no longer does. The caller then moves it back to wait (BullMQ's public
 * `job.moveToWait(token)`), as BullMQ's stalled check does.
 */
export async function countStall(redis: RedisClient, jobKey: string, token: string, maxStalledCount: number, reason: string, eventsKey: string, jobId: string): Promise<number> {
  return Number(await runScript(redis, COUNT_STALL, [jobKey, lockKeyOf(jobKey), eventsKey], [token, maxStalledCount, reason, jobId]));
}

/** Sets the job's stall count back to 0 while `token` holds it; true if it did. */
export async function resetStallCount(redis: RedisClient, jobKey: string, token: string): Promise<boolean> {
  return (await runScript(redis, RESET_STALLS, [jobKey, lockKeyOf(jobKey)], [token])) === 1;
}

/** Where a queue's active list and job hashes are (a BullMQ Worker's or Queue's `keys.active` and `toKey`). */
export interface ActiveJobs {
  keys: { active?: string };
  toKey(id: string): string;
}

/**
 * The active jobs of a queue whose BullMQ lock a Worker holds (every lock token starts with its Worker's
 * id), optionally only those `keep` accepts. One LRANGE, then the locks 500 at a time (one slot on a
 * cluster: a queue's keys share its tag).
 */
export async function activeLockedBy(
  redis: RedisClient,
  queue: ActiveJobs,
  workerId: string,
  keep: (jobId: string) => boolean = () => true,
): Promise<{ id: string; token: string }[]> {
  const active = await redis.lrange(queue.keys.active as string, 0, -1);
  const held: { id: string; token: string }[] = [];
  for (let i = 0; i < active.length; i += 500) {
    const ids = active.slice(i, i + 500);
    const tokens = await redis.mget(ids.map((id) => lockKeyOf(queue.toKey(id))));
    ids.forEach((id, k) => {
      const token = tokens[k];
      if (token?.startsWith(`${workerId}:`) && keep(id)) held.push({ id, token });
    });
  }
  return held;
}
