import type { StallBook } from '@tickwork/bullmq-engine';
import { keyspaceOn, type Logger, type RedisClient } from '@tickwork/core';
import { STALLED_REASON } from '@tickwork/bullmq-engine';
import type { Job } from 'bullmq';

/**
 * BullMQ counts each stall of a job (its worker died or froze past the lock) and fails the job once the
 * count passes `maxStalledCount`, however far each delivery got. A run that keeps making progress through
 * a crash loop should not be dead-lettered for it, so the first step a delivery records (runs and records,
 * not replays) starts the count again: only stalls in a row without a new step count.
 *
 * - On the engine's fast path BullMQ's own count (`stc` in the job hash) is set back to 0, fenced by the
 *   job's lock token (StallBook.resetStallCount), and BullMQ keeps enforcing the limit.
 * - On BullMQ's public paths nothing may write BullMQ's fields, so BullMQ's limit is lifted (the Worker's
 *   maxStalledCount: PUBLIC_PATH_MAX_STALLED) and tickwork keeps the rule itself: a step recorded notes the
 *   job's stall count so far in a key of tickwork's own, and a delivery whose count has grown by more than
 *   the limit since (or since the start) fails at once, for good, with BullMQ's reason.
 */
export interface StallProgress {
  /** A delivery of a job that stalled before recorded a step: its stalls so far no longer count. */
  progressed(job: Job, jobKey: string, token: string): Promise<boolean>;
  /** Where BullMQ does not hold the job to the limit itself (public paths): whether it stalled too often without progress. */
  overLimit?(job: Job): Promise<boolean>;
}

/** The Worker's maxStalledCount on BullMQ's public paths, where tickwork keeps the limit (see StallProgress). */
export const PUBLIC_PATH_MAX_STALLED = 1_000_000;

/** The fast path's: BullMQ's own count set back to 0 while the token holds the job. */
export function bullmqStallProgress(redis: RedisClient, stalls: StallBook): StallProgress {
  return { progressed: (_job, jobKey, token) => stalls.resetStallCount(redis, jobKey, token) };
}

/** How long the note of a job's last progress is kept: past it, the job is long gone from BullMQ (its attempts' backoff aside). */
const PROGRESS_NOTE_TTL_MS = 7 * 24 * 3600_000;

/** The public paths': tickwork's own note of the stall count at the last progress, and the limit held against it. */
export function ownStallProgress(redis: RedisClient, prefix: string, maxStalledCount: number): StallProgress {
  // In the queue's slot on a cluster (its run prefix), beside the job's other records.
  const noteKey = (job: Job) => `${keyspaceOn(redis, prefix, job.queueName).runPrefix}:stalls:${job.queueName}:${String(job.id)}`;
  return {
    async progressed(job) {
      await redis.set(noteKey(job), String(job.stalledCounter), 'PX', PROGRESS_NOTE_TTL_MS);
      return true;
    },
    async overLimit(job) {
      if (!(job.stalledCounter > maxStalledCount)) return false;
      const at = Number((await redis.get(noteKey(job))) ?? 0);
      return job.stalledCounter - (Number.isFinite(at) ? at : 0) > maxStalledCount;
    },
  };
}

/** The error a delivery past the limit fails with: BullMQ's own reason, so a dead letter reads the same on both paths. */
export function stalledTooOften(job: Job, maxStalledCount: number): string {
  return `${STALLED_REASON}: it stalled ${job.stalledCounter} times, more than WORKER_MAX_STALLED_COUNT (${maxStalledCount}) without a step recorded in between`;
}

/**
 * The run's `onStepRecorded` hook, or undefined for a job that never stalled (it costs nothing then). It
 * notes the progress once per delivery; a failure only costs the stall budget (the step itself is recorded).
 */
export function stallResetOnProgress(opts: { job: Job; jobKey: string; token: string | undefined; log: Logger; progress: StallProgress }): (() => Promise<void>) | undefined {
  const { job, token } = opts;
  if (!(job.stalledCounter > 0) || !token) return undefined;
  let reset: Promise<void> | undefined;
  const resetOnce = async () => {
    try {
      if (await opts.progress.progressed(job, opts.jobKey, token)) opts.log.info({ stalledCount: job.stalledCounter }, 'run made progress after stalling; its stall count starts again');
    } catch (err) {
      opts.log.warn({ err: { message: (err as Error).message } }, 'could not reset the stall count after progress');
    }
  };
  return () => (reset ??= resetOnce());
}
