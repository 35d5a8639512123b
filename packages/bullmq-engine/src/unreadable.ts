import type { RedisClient } from '@tickwork/core';
import { Job, UnrecoverableError, type Queue } from 'bullmq';

/**
 * Jobs whose stored hash BullMQ cannot decode: written by another producer or by hand (`HSET <prefix>:<queue>:<id>
 * data '{not json'`), or by a bug. BullMQ locks such a job as it delivers it, then throws decoding it (its data
 * in Job.fromJSON, its options in raw2NextJobData): the Worker only emits the error, the job stays in `active`
 * under a lock nothing renews, BullMQ's stalled check puts it back once the lock expires, and the next delivery
 * throws again, forever, its stall count climbing; a deferred failure past maxStalledCount is applied to the
 * Job BullMQ never makes. So a worker that sees such an error looks for these jobs among its queue's active
 * ones and fails each for good, with why, through BullMQ's public `job.moveToFailed` on a stand-in Job (only
 * its id, name and no options: nothing of it is written back), leaving the stored strings as they are for
 * the DLQ's raw entry (@tickwork/operations, dlq/raw-entry.ts). Used the same way on both engine paths.
 */

/** A job failed for good because it cannot be read. */
export interface UnreadableJob {
  id: string;
  name: string;
  reason: string;
}

/** The hash fields BullMQ decodes as JSON when it delivers a job, with what a failure of each says. */
const DECODED: readonly (readonly [field: string, what: string, decode: (raw: string | undefined) => unknown])[] = [
  ['data', 'job data is not JSON', (raw) => JSON.parse(raw || '{}')],
  ['opts', 'job options are not JSON', (raw) => Job.optsFromJSON(raw)],
  ['progress', 'job progress is not JSON', (raw) => JSON.parse(raw || '0')],
  ['parent', 'job parent is not JSON', (raw) => (raw ? JSON.parse(raw) : undefined)],
];

/** Why BullMQ cannot make a Job of this stored hash (e.g. `job data is not JSON: Unexpected token ...`), or undefined when it can. */
export function unreadableReason(hash: Readonly<Record<string, string | null | undefined>>): string | undefined {
  const problems: string[] = [];
  for (const [field, what, decode] of DECODED) {
    try {
      decode(hash[field] ?? undefined);
    } catch (err) {
      problems.push(`${what}: ${err instanceof Error ? err.message : String(err)}`);
    }
  }
  return problems.length > 0 ? problems.join('; ') : undefined;
}

/**
 * Whether `err` may be BullMQ failing to decode a delivered job: JSON.parse's SyntaxError, or the TypeError
 * of options that are JSON `null`. A false alarm costs one look at the active jobs (failUnreadableActive).
 */
export function isJobDecodeError(err: unknown): boolean {
  return err instanceof SyntaxError || err instanceof TypeError;
}

export interface FailUnreadableOptions {
  /** Jobs not to look at (those this process runs: a job it runs was read). */
  skip?: (id: string) => boolean;
  /**
   * The lock token of a job, where known: the move is then fenced by it and drops the lock. Otherwise '0',
   * BullMQ's token for a move without a lock check (Job.moveToWait's default): the delivery that locked the
   * job failed, so nothing will ever renew or release that lock, and it expires on its own.
   */
  tokenOf?: (id: string) => string | undefined;
}

/**
 * Fails for good every active job of `queue` that cannot be read (unreadableReason), with that reason; returns
 * them. A job that left `active` meanwhile, or whose lock another token holds, is left alone (BullMQ refuses
 * the move). Reads each active job's decoded fields: meant to run when a decode error was seen, not routinely.
 */
export async function failUnreadableActive(queue: Queue, redis: RedisClient, o: FailUnreadableOptions = {}): Promise<UnreadableJob[]> {
  const ids = (await queue.getRanges(['active'], 0, -1)).filter((id) => !o.skip?.(id));
  if (ids.length === 0) return [];
  const pipe = redis.pipeline();
  for (const id of ids) pipe.hmget(queue.toKey(id), 'name', ...DECODED.map(([field]) => field));
  const replies = (await pipe.exec()) ?? [];
  const failed: UnreadableJob[] = [];
  for (const [i, id] of ids.entries()) {
    const [err, values] = replies[i] ?? [];
    if (err || !Array.isArray(values) || values.every((v) => v === null)) continue;
    const [name, ...fields] = values as (string | null)[];
    const reason = unreadableReason(Object.fromEntries(DECODED.map(([field], k) => [field, fields[k]])));
    if (!reason) continue;
    const job = new Job(queue, name ?? '', null, {}, id);
    try {
      await job.moveToFailed(new UnrecoverableError(reason), o.tokenOf?.(id) ?? '0', false);
      failed.push({ id, name: name ?? '', reason });
    } catch {
      // No longer active, or locked by another token: whoever has it now sees it fail to decode in turn.
    }
  }
  return failed;
}
