import { Job, type Queue } from 'bullmq';
import type { RedisClient } from '@tickwork/core';
import { z } from 'zod';
import type { Catalog } from '@tickwork/core';
import { defineJob, type AnyJob } from '@tickwork/core';
import { validatePayload } from '@tickwork/core';
import { dlqName, tracedInJob, type QueueSet } from '@tickwork/core';
import { deliveryOf, idempotencyKeyOf, nominalTimeOf, scheduleIdOf, SCHEDULED_RUN_OPTION, type Delivery } from '@tickwork/core';
import { isCancellationReason } from '../cancel/cancel-requests.js';
import { deadLetterJobId } from './ids.js';
import { rawDeadLetterEntry } from './raw-entry.js';
import { noteTrail } from './trail.js';
import { REDRIVE_OPTION } from '@tickwork/core';
import type { DeadLetter, DeadLetterEntry } from './entry.js';

/** Job hash field where the worker notes the first failed attempt; BullMQ keeps only the last one. */
export const FIRST_FAILED_FIELD = 'twFirstFailedOn';

/**
 * Notes the time of a job's first failed attempt in the job's own hash (so it disappears with the job).
 * Only if the hash still exists: a job removed meanwhile must not be resurrected as a stray key.
 */
export async function noteFailedAttempt(redis: RedisClient, queue: Queue, jobId: string, at: number): Promise<void> {
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

/** What a move needs besides the job. */
export interface MoveOptions {
  queues: QueueSet;
  redis: RedisClient;
  catalog: Catalog;
  now?: Date;
}

/**
 * Copies a finally-failed job into `<queue>.dlq` and then removes it from the failed set.
 *
 * Crash-safe and idempotent: the DLQ id derives from the origin job (a repeated add is a no-op), the
 * origin is removed only after the entry exists, and anything left in the failed set by a crash in
 * between is picked up again by the sweep. Returns undefined when the job is not (or no longer) failed.
 *
 * A job that cannot be described normally (describing it throws) is moved as a raw entry (see
 * rawDeadLetterEntry) rather than left to jam the sweep. Redis errors propagate: the sweep retries them.
 */
export function moveToDeadLetter(opts: MoveOptions & { job: Job }): Promise<MoveResult | undefined> {
  const { job } = opts;
  // Traces on: the move is a span in the job's own trace (the context BullMQ carried in it).
  const attributes = { 'tickwork.queue': job.queueName, 'tickwork.job.id': String(job.id), 'tickwork.job.name': job.name };
  return tracedInJob('tickwork.dead-letter', attributes, job.opts.telemetry?.metadata, () => moveFailed(opts));
}

async function moveFailed(opts: MoveOptions & { job: Job }): Promise<MoveResult | undefined> {
  const { job } = opts;
  if ((await job.getState()) !== 'failed') return undefined;
  // An operator cancelled it: a decision, not a failure to re-drive; it stays in the failed set (an
  // operator may retry it there) until BullMQ's removeOnFail trims it.
  if (isCancellationReason(job.failedReason)) return undefined;
  const firstFailedOn = await firstFailedOf(opts, job.queueName, String(job.id));
  const now = opts.now ?? new Date();
  let entry: DeadLetterEntry;
  try {
    entry = buildEntry(job, opts.catalog, firstFailedOn, now);
  } catch (err) {
    const raw = await rawEntryOf(opts, job.queueName, String(job.id), firstFailedOn, describeFailure(err), now);
    if (!raw) return undefined;
    entry = raw;
  }
  return commit(opts, entry);
}

/**
 * The sweep's move: reads the failed job by id, so even a job BullMQ cannot parse (its data or options are
 * not JSON; `getFailed` would throw for the whole page) is moved, as a raw entry. Returns undefined when
 * the job is not (or no longer) failed.
 */
export async function moveFailedJob(opts: MoveOptions & { queue: string; jobId: string }): Promise<MoveResult | undefined> {
  const origin = opts.queues.get(opts.queue);
  let job: Job | undefined;
  try {
    job = await Job.fromId(origin, opts.jobId);
  } catch (err) {
    // Decoding errors only; anything else (Redis down) is for the next sweep.
    if (!(err instanceof SyntaxError || err instanceof TypeError || err instanceof RangeError)) throw err;
    if ((await origin.getJobState(opts.jobId)) !== 'failed') return undefined;
    const firstFailedOn = await firstFailedOf(opts, opts.queue, opts.jobId);
    const raw = await rawEntryOf(opts, opts.queue, opts.jobId, firstFailedOn, describeFailure(err), opts.now ?? new Date());
    return raw && commit(opts, raw);
  }
  return job && moveToDeadLetter({ ...opts, job });
}

async function firstFailedOf(opts: MoveOptions, queue: string, jobId: string): Promise<number | undefined> {
  const raw = await opts.redis.hget(opts.queues.get(queue).toKey(jobId), FIRST_FAILED_FIELD);
  return raw === null ? undefined : Number(raw);
}

async function rawEntryOf(
  opts: MoveOptions,
  queue: string,
  jobId: string,
  firstFailedOn: number | undefined,
  reason: string,
  now: Date,
): Promise<DeadLetterEntry | undefined> {
  const hash = await opts.redis.hgetall(opts.queues.get(queue).toKey(jobId));
  if (Object.keys(hash).length === 0) return undefined;
  return rawDeadLetterEntry({ queue, jobId, hash, firstFailedOn, reason: `tickwork could not read this job: ${reason}`, now });
}

function describeFailure(err: unknown): string {
  return err instanceof Error ? `${err.name}: ${err.message}` : String(err);
}

async function commit(opts: MoveOptions, entry: DeadLetterEntry): Promise<MoveResult> {
  const { queues, redis } = opts;
  const dlqQueue = dlqName(entry.originQueue);
  const dlqJobId = deadLetterJobId({ id: entry.originalJobId, timestamp: entry.originalTimestamp });
  // No attempts/backoff/removeOn* options: nothing processes a DLQ and entries leave it only by re-drive or purge.
  await queues.get(dlqQueue).add(entry.jobName, entry, { jobId: dlqJobId });
  const claimed = (await redis.set(claimKey(queues.keyspace(dlqQueue).runPrefix, dlqQueue, dlqJobId), '1', 'EX', CLAIM_TTL_S, 'NX')) === 'OK';
  // Before the origin goes, so a search for its id always finds the job or where it went (trail.ts).
  await noteTrail(queues, entry.originQueue, entry.originalJobId, { to: 'dead-letter', queue: dlqQueue, id: dlqJobId, at: entry.deadLetteredAt });
  await queues.get(entry.originQueue).remove(entry.originalJobId);
  return { deadLetter: { dlqQueue, dlqJobId, entry }, claimed };
}

/** Long enough to outlive any sweep of the same failed job; short enough not to accumulate forever. */
const CLAIM_TTL_S = 30 * 24 * 3600;

/** `prefix`: the queue's run prefix (redis/keyspace.ts): on a cluster the claim is on the queue's slot. */
function claimKey(prefix: string, dlqQueue: string, dlqJobId: string): string {
  return `${prefix}:meta:dlq-claimed:${dlqQueue}:${dlqJobId}`;
}

function buildEntry(job: Job, catalog: Catalog, firstFailedOn: number | undefined, now: Date): DeadLetterEntry {
  const delivery = deliveryOf(job);
  const redrive = delivery.redrive;
  const lastFailedOn = job.finishedOn ?? now.getTime();
  const { [REDRIVE_OPTION]: redriveRaw, [SCHEDULED_RUN_OPTION]: occurrenceRaw, ...rest } = job.opts as Record<string, unknown>;
  // tickwork's own options leave the copy once their meaning is in the entry; malformed ones stay, as the record.
  const originalOptions = {
    ...rest,
    ...(redriveRaw !== undefined && !redrive && { [REDRIVE_OPTION]: redriveRaw }),
    ...(occurrenceRaw !== undefined && !delivery.scheduled && { [SCHEDULED_RUN_OPTION]: occurrenceRaw }),
  };
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
    scheduleId: scheduleIdOf(delivery) ?? null,
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
