import type { Logger } from '@tickwork/core';
import type { Job } from 'bullmq';
import type { RedisClient } from '@tickwork/core';

/** Resets BullMQ's stall count (`stc` in the job hash) only while `token` still holds the job's lock. */
const RESET_STALLS = `if redis.call('GET', KEYS[2]) == ARGV[1] and redis.call('EXISTS', KEYS[1]) == 1 then
  redis.call('HSET', KEYS[1], 'stc', 0)
  return 1
end
return 0`;

/**
 * BullMQ counts each stall of a job (its worker died or froze past the lock) in the job hash and fails the
 * job once the count passes `maxStalledCount`, however far each delivery got. A run that keeps making
 * progress through a crash loop should not be dead-lettered for it, so the first step a delivery records
 * (runs and records, not replays) resets the count: only stalls in a row without a new step count.
 *
 * Returns the run's `onStepRecorded` hook, or undefined for a job that never stalled (it costs nothing
 * then). The reset is fenced by the job's lock token, so a delivery that lost the job changes nothing.
 */
export function stallResetOnProgress(opts: { job: Job; jobKey: string; token: string | undefined; redis: RedisClient; log: Logger }): (() => Promise<void>) | undefined {
  const { job, token } = opts;
  if (!(job.stalledCounter > 0) || !token) return undefined;
  let reset: Promise<void> | undefined;
  const resetOnce = async () => {
    const { jobKey } = opts;
    try {
      const done = await opts.redis.eval(RESET_STALLS, 2, jobKey, `${jobKey}:lock`, token);
      if (done === 1) opts.log.info({ stalledCount: job.stalledCounter }, 'run made progress after stalling; its stall count starts again');
    } catch (err) {
      // Only the stall budget is at stake: the step itself is recorded.
      opts.log.warn({ err: { message: (err as Error).message } }, 'could not reset the stall count after progress');
    }
  };
  return () => (reset ??= resetOnce());
}
