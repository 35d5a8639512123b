import type { Job, Queue } from 'bullmq';
import type { Redis } from 'ioredis';
import { z } from 'zod';
import type { Catalog } from '../catalog.js';
import { defineJob, type AnyJob } from '../define-job.js';
import { validatePayload } from '../payload.js';
import { dlqName, type QueueSet } from '../queues.js';
import { idempotencyKeyOf, nominalTimeOf, type Delivery } from '../run-identity.js';
import { deadLetterJobId } from './ids.js';
import { REDRIVE_OPTION, redriveMetaOf, type DeadLetter, type DeadLetterEntry } from './entry.js';

/** Job hash field where the worker notes the first failed attempt; BullMQ keeps only the last one. */
export const FIRST_FAILED_FIELD = 'twFirstFailedOn';

/**
 * Notes the time of a job's first failed attempt in the job's own hash (so it disappears with the job).
 * Only if the hash still exists: a job removed meanwhile must not be resurrected as a stray key.
 */
export async function noteFailedAttempt(redis: Redis, queue: Queue, jobId: string, at: number): Promise<void> {
  await redis.eval(
    "if redis.call('EXISTS', KEYS[1]) == 1 then return redis.call('HSETNX', KEYS[1], ARGV[1], ARGV[2]) end return 0",
    1,
    queue.toKey(jobId),
    FIRST_FAILED_FIELD,
    String(at),
  );
}

export interface MoveResult {
  deadLetter: DeadLetter;
  /**
   * True for exactly one of any number of concurrent or repeated moves of the same failed job (the one
   * that claimed it), so alerts and counters fire once per entry.
   */
  claimed: boolean;
}

/**
 * Copies a finally-failed job into `<queue>.dlq` and then removes it from the failed set.
 *
 * Crash-safe and idempotent: the DLQ id derives from the origin job (a repeated add is a no-op), the
 * origin is removed only after the entry exists, and anything left in the failed set by a crash in
 * between is picked up again by the sweep. Returns undefined when the job is not (or no longer) failed.
 */
export async function moveToDeadLetter(opts: {
  job: Job;
  queues: QueueSet;
  redis: Redis;
  catalog: Catalog;
  now?: Date;
}): Promise<MoveResult | undefined> {
  const { job, queues, redis, catalog } = opts;
  const origin = queues.get(job.queueName);
  const state = await job.getState();
  if (state !== 'failed') return undefined;
  const firstFailedRaw = await redis.hget(origin.toKey(String(job.id)), FIRST_FAILED_FIELD);
  const entry = buildEntry(job, catalog, firstFailedRaw === null ? undefined : Number(firstFailedRaw), opts.now ?? new Date());
  const dlqQueue = dlqName(job.queueName);
  const dlqJobId = deadLetterJobId({ id: String(job.id), timestamp: job.timestamp });
  // No attempts/backoff/removeOn* options: nothing processes a DLQ and entries leave it only by re-drive or purge.
  await queues.get(dlqQueue).add(job.name, entry, { jobId: dlqJobId });
  const claimed = (await redis.set(claimKey(queues.prefix, dlqQueue, dlqJobId), '1', 'EX', CLAIM_TTL_S, 'NX')) === 'OK';
  await origin.remove(String(job.id));
  return { deadLetter: { dlqQueue, dlqJobId, entry }, claimed };
}

/** Long enough to outlive any sweep of the same failed job; short enough not to accumulate forever. */
const CLAIM_TTL_S = 30 * 24 * 3600;

function claimKey(prefix: string, dlqQueue: string, dlqJobId: string): string {
  return `${prefix}:meta:dlq-claimed:${dlqQueue}:${dlqJobId}`;
}

function buildEntry(job: Job, catalog: Catalog, firstFailedOn: number | undefined, now: Date): DeadLetterEntry {
  const redrive = redriveMetaOf(job.opts);
  const delivery: Delivery = {
    id: String(job.id),
    name: job.name,
    data: job.data,
    repeatJobKey: job.repeatJobKey,
    prevMillis: job.opts.prevMillis,
    redrive,
  };
  const lastFailedOn = job.finishedOn ?? now.getTime();
  const { [REDRIVE_OPTION]: _meta, ...originalOptions } = job.opts as Record<string, unknown>;
  const nominal = nominalTimeOf(delivery);
  const stack = job.stacktrace?.at(-1) ?? null;
  return {
    v: 1,
    originQueue: job.queueName,
    jobName: job.name,
    payload: job.data,
    originalJobId: String(job.id),
    originalTimestamp: job.timestamp,
    originalOptions,
    idempotencyKey: keyOf(catalog.get(job.name) ?? unknownJob(job), delivery),
    failureReason: job.failedReason || '(no reason recorded)',
    stack,
    attemptsMade: job.attemptsMade,
    firstFailedAt: new Date(firstFailedOn ?? lastFailedOn).toISOString(),
    lastFailedAt: new Date(lastFailedOn).toISOString(),
    deadLetteredAt: now.toISOString(),
    nominalTime: nominal?.toISOString() ?? null,
    scheduleId: redrive ? (redrive.scheduleId ?? null) : (job.repeatJobKey ?? null),
    redriveCount: redrive?.redriveCount ?? 0,
    rootDlqJobId: redrive?.rootDlqJobId ?? deadLetterJobId({ id: String(job.id), timestamp: job.timestamp }),
    history: redrive?.history ?? [],
  };
}

/** The run's idempotency key, as the processor would compute it; an invalid payload falls back to the raw data. */
function keyOf(def: AnyJob, delivery: Delivery): string {
  let data: unknown = delivery.data;
  try {
    data = validatePayload(def, delivery.data);
  } catch {
    // Invalid payloads are one of the reasons a job lands here; the key is still needed.
  }
  try {
    return idempotencyKeyOf(def, delivery, data);
  } catch {
    // A custom idempotencyKey(data) may throw on the malformed data; the job id still names the run.
    return idempotencyKeyOf({ ...def, idempotencyKey: undefined }, delivery, data);
  }
}

/** Stand-in definition for a job name this worker has no handler for: its key falls back to the job id. */
function unknownJob(job: Job): AnyJob {
  return defineJob({
    name: job.name,
    queue: job.queueName,
    schema: z.looseObject({}),
    handler: () => Promise.reject(new Error('unknown job')),
  });
}
