import type { AnyJob } from './define-job.js';
import { describeIssues, JobDefinitionError, PayloadValidationError, UnknownJobError } from '../errors.js';
import { validatePayload } from './payload.js';
import { validateSchedule } from './schedule-spec.js';
import { positiveDurationMs } from './schedule-policy.js';

/** BullMQ reserves ':' in queue names (it is the key separator), so catalog names avoid it. */
const NAME = /^[a-z][a-z0-9._-]*$/;

export interface Catalog {
  readonly jobs: readonly AnyJob[];
  readonly queues: readonly string[];
  get(name: string): AnyJob | undefined;
  /** Like get, but throws UnknownJobError listing the known names. */
  require(name: string): AnyJob;
  scheduled(): AnyJob[];
  /** The rate limit of `queue` (BullMQ's limiter: at most `max` runs start per `durationMs`), if its jobs set one. */
  rateLimitOf(queue: string): { max: number; durationMs: number } | undefined;
  /** The batch job (`defineBatchJob`) that owns `queue`, if its jobs are handled in batches. */
  batchJobOf(queue: string): AnyJob | undefined;
}

/** The largest batch a batch job may ask for: a batch's ids travel as one script call's arguments. */
export const MAX_BATCH_SIZE = 1000;

/** Checks every definition up front so a bad catalog fails at start, not at the first occurrence. */
export function createCatalog(jobs: readonly AnyJob[]): Catalog {
  const byName = new Map<string, AnyJob>();
  for (const job of jobs) {
    if (!NAME.test(job.name)) {
      throw new JobDefinitionError(job.name, 'name must be lower-case letters, digits, ".", "_" or "-"');
    }
    if (!NAME.test(job.queue)) {
      throw new JobDefinitionError(job.name, `queue ${JSON.stringify(job.queue)} must match ${NAME}`);
    }
    if (byName.has(job.name)) throw new JobDefinitionError(job.name, 'defined twice in the catalog');
    // First: what a batch job may not set is the error to show, not that setting's own validation.
    if (job.batch) validateBatch(job, jobs);
    if (job.idempotencyWindow !== undefined) idempotencyWindowMs(job);
    validatePriority(job);
    if (job.schedule) {
      validateSchedule(job.name, job.schedule);
      validateScheduleData(job);
    }
    byName.set(job.name, job);
  }
  const queues = [...new Set(jobs.map((j) => j.queue))].sort();
  const rateLimits = queueRateLimits(jobs);
  return {
    jobs: [...jobs],
    queues,
    get: (name) => byName.get(name),
    require(name) {
      const job = byName.get(name);
      if (!job) throw new UnknownJobError(name, [...byName.keys()]);
      return job;
    },
    scheduled: () => jobs.filter((j) => j.schedule !== undefined),
    rateLimitOf: (queue) => rateLimits.get(queue),
    batchJobOf: (queue) => jobs.find((j) => j.batch !== undefined && j.queue === queue),
  };
}

/** The job's own dedupe window in ms (`idempotencyWindow`), or undefined for the ledger's default. */
export function idempotencyWindowMs(job: AnyJob): number | undefined {
  if (job.idempotencyWindow === undefined) return undefined;
  // Whole milliseconds: Redis takes the TTL as an integer.
  return Math.ceil(positiveDurationMs(job.name, 'idempotencyWindow', job.idempotencyWindow, '{ days: 3 }'));
}

/**
 * A schedule's runs get `schedule.data` as their data, so it must pass the job's schema. The error names
 * `schedule.data` (not "payload"): that is what the job's author has to add or fix.
 */
function validateScheduleData(job: AnyJob): void {
  try {
    validatePayload(job, job.schedule?.data ?? {});
  } catch (err) {
    if (!(err instanceof PayloadValidationError)) throw err;
    const issues = describeIssues(err.issues);
    throw new JobDefinitionError(
      job.name,
      `schedule.data does not match the job's schema (${issues}); every scheduled run gets schedule.data as its data: set it in the schedule, e.g. schedule: { ..., data: { ... } }`,
    );
  }
}

/**
 * A batch job's worker takes every job of its queue into its batches, so the queue is the batch job's
 * alone; and what a batch cannot honour per job (a schedule's history, an idempotency key, a priority or
 * a rate limit) is refused here rather than ignored at run time.
 */
function validateBatch(job: AnyJob, jobs: readonly AnyJob[]): void {
  const size = job.batch?.size;
  if (!Number.isInteger(size) || (size as number) < 1 || (size as number) > MAX_BATCH_SIZE) {
    throw new JobDefinitionError(job.name, `batch.size ${JSON.stringify(size)} must be an integer from 1 to ${MAX_BATCH_SIZE}`);
  }
  const concurrency = job.batch?.concurrency;
  if (concurrency !== undefined && (!Number.isInteger(concurrency) || concurrency < 1 || concurrency > 64)) {
    throw new JobDefinitionError(job.name, `batch.concurrency ${JSON.stringify(concurrency)} must be an integer from 1 to 64`);
  }
  const keep = job.batch?.keepCompleted;
  if (keep !== undefined && (!Number.isInteger(keep) || keep < 0)) {
    throw new JobDefinitionError(job.name, `batch.keepCompleted ${JSON.stringify(keep)} must be a whole number of jobs (0 deletes each as it completes)`);
  }
  const other = jobs.find((j) => j !== job && j.queue === job.queue);
  if (other) throw new JobDefinitionError(job.name, `is a batch job, so queue "${job.queue}" must be its alone, but ${other.name} uses it too: give one of them another queue`);
  for (const option of ['schedule', 'idempotencyKey', 'idempotencyWindow', 'priority', 'rateLimit'] as const) {
    if (job[option] !== undefined) throw new JobDefinitionError(job.name, `a batch job cannot set ${option}: its runs are named by their job ids and fetched oldest first, many at a time`);
  }
}

/** BullMQ's priority range: 1 (highest) to 2,097,152. */
export const MAX_PRIORITY = 2_097_152;

function validatePriority(job: AnyJob): void {
  const p = job.priority;
  if (p !== undefined && (!Number.isInteger(p) || p < 1 || p > MAX_PRIORITY)) {
    throw new JobDefinitionError(job.name, `priority ${JSON.stringify(p)} must be an integer from 1 (highest) to ${MAX_PRIORITY}`);
  }
}

/**
 * A rate limit belongs to a queue (BullMQ's limiter counts every run a queue starts), so the jobs of a queue
 * that set one must agree: a definition that disagrees stops the catalog rather than one silently winning.
 */
function queueRateLimits(jobs: readonly AnyJob[]): Map<string, { max: number; durationMs: number }> {
  const limits = new Map<string, { max: number; durationMs: number; from: string }>();
  for (const job of jobs) {
    if (!job.rateLimit) continue;
    const { max } = job.rateLimit;
    if (!Number.isInteger(max) || max < 1) throw new JobDefinitionError(job.name, `rateLimit.max ${JSON.stringify(max)} must be a positive integer`);
    const durationMs = positiveDurationMs(job.name, 'rateLimit.duration', job.rateLimit.duration, '{ seconds: 1 }');
    const seen = limits.get(job.queue);
    if (seen && (seen.max !== max || seen.durationMs !== durationMs)) {
      throw new JobDefinitionError(
        job.name,
        `rateLimit { max: ${max}, ${durationMs} ms } differs from ${seen.from}'s { max: ${seen.max}, ${seen.durationMs} ms } on queue "${job.queue}": a rate limit is the queue's, so its jobs must agree`,
      );
    }
    limits.set(job.queue, { max, durationMs, from: seen?.from ?? job.name });
  }
  return new Map([...limits].map(([q, { max, durationMs }]) => [q, { max, durationMs }]));
}
