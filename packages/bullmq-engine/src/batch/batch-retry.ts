import type { RedisClient } from '@tickwork/core';
import { Backoffs, type JobsOptions } from 'bullmq';

/**
 * How the fast store retries a failed attempt: by the job's own options as stored in its hash (`opts`:
 * options written by a producer are the job's), with BullMQ's Backoffs, as BullMQ's moveToFailed does.
 */

/** Each job's options as stored in its hash; a job whose options are not JSON counts as having none. */
export async function readOptions(redis: RedisClient, jobPrefix: string, ids: readonly string[]): Promise<(JobsOptions | undefined)[]> {
  if (ids.length === 0) return [];
  const pipe = redis.pipeline();
  for (const id of ids) pipe.hget(jobPrefix + id, 'opts');
  const replies = (await pipe.exec()) ?? [];
  return replies.map(([e, raw]) => {
    if (e || typeof raw !== 'string') return undefined;
    try {
      const parsed: unknown = JSON.parse(raw);
      return parsed && typeof parsed === 'object' ? (parsed as JobsOptions) : undefined;
    } catch {
      return undefined;
    }
  });
}

/**
 * The delay before the next attempt in ms, 0 for none, or -1 when the job has used its attempts (BullMQ's
 * default is one attempt). A backoff BullMQ does not know retries at once rather than losing the job.
 */
export function retryDelay(opts: JobsOptions | undefined, attemptsMade: number, err: unknown): number {
  const attempts = typeof opts?.attempts === 'number' && opts.attempts >= 1 ? opts.attempts : 1;
  if (attemptsMade >= attempts) return -1;
  if (opts?.backoff === undefined) return 0;
  try {
    // No job is passed: only custom strategies (which a batch worker does not register) read it.
    const backoff = Backoffs.normalize(opts.backoff);
    const delay = backoff ? Backoffs.calculate(backoff, attemptsMade, err as Error, undefined as never, undefined) : 0;
    return typeof delay === 'number' && Number.isFinite(delay) && delay > 0 ? Math.round(delay) : 0;
  } catch {
    return 0;
  }
}
