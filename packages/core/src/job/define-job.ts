import type { DurationLike } from 'luxon';
import type { RedisClient } from '../redis/connection.js';
import type { z } from 'zod';
import type { Logger } from '../logger.js';
import type { LockFn, RedisStepFn, StepInfo } from './handler-api.js';
import type { RedisTx } from '../redis/redis-tx.js';
import type { OverlapPolicy } from './overlap-policy.js';

/**
 * A schedule always names its IANA timezone: "midnight" means nothing without one, and defaulting to
 * the server's zone is how cron jobs silently move when a host is rebuilt. `UTC` is a fine choice.
 */
export type ScheduleSpec =
  | ({ pattern: string; every?: never } & ScheduleCommon)
  | ({ every: DurationLike; pattern?: never } & ScheduleCommon);

export interface ScheduleCommon {
  /** IANA timezone, e.g. `UTC`, `America/New_York`. Required. */
  tz: string;
  /** Static payload every occurrence gets. Validated against the job's schema at start. */
  data?: Record<string, unknown>;
  /**
   * What a wall-clock time that does not exist (spring forward, `gap`) or exists twice (fall back, `fold`)
   * means for this schedule. Default `{ gap: 'shift', fold: 'once' }`: a daily job runs exactly once on
   * every local date, on that date. `gap: 'shift'` runs 02:30 at 03:30 (moved by the size of the gap; by as
   * much earlier where later would be the next date, as for 23:30 in Nuuk); `'skip'` drops it.
   * `fold: 'once'` runs at the first 01:30; `'twice'` at both. Patterns that fire every hour (`*` in the
   * hour field) and `every` intervals other than whole days ignore this: they keep their spacing in real
   * time. An `every` of whole days runs at local midnight and follows it, as `0 0 * * *` would.
   */
  dst?: Partial<DstPolicy>;
  /**
   * What the scheduler does with occurrences that were due while it was down (found when it starts and on
   * every tick). Default `'skip'`: record them as `missed`. `'once'`: run the latest one (flagged
   * `ctx.isCatchUp`) and record the rest as missed. `'all'`: run up to `maxCatchUp` of them (the latest).
   * Only occurrences inside `catchUpWindow` are ever run. Nothing is lost silently: each is run or recorded.
   */
  missed?: MissedPolicy;
  /** How far back catch-up looks; older occurrences are recorded as missed. Default 24 hours. */
  catchUpWindow?: DurationLike;
  /** With `missed: 'all'`, at most this many catch-up runs per outage (1..1000). Default 10. */
  maxCatchUp?: number;
  /**
   * What happens when an occurrence becomes due while the previous one is still
   * running. `skip` (default) records it as skipped, `buffer-one` runs it after the previous one (at most
   * one waits), `allow` runs it concurrently.
   */
  overlap?: OverlapPolicy;
  /**
   * A run still going this long after it started is slow: the scheduler's watchdog alerts once per
   * occurrence (`schedule_slow_run`). Default: the schedule's interval, at least one minute (a run that
   * outlasts its interval collides with the next occurrence).
   */
  slowAfter?: DurationLike;
  /**
   * Spread (jitter) the schedule's runs over this window, e.g. `{ minutes: 10 }`: every occurrence fires a
   * fixed offset after its pattern time, the offset chosen from the schedule's id (whole seconds, from 0 up
   * to the window). Many schedules due at the same instant (everyone's 09:00) then fire spread over the
   * window, while each one fires at the same offset every time. Catch-up, missed runs, history and previews
   * all use the shifted times. At most 24 hours. Default: no spread.
   */
  spread?: DurationLike;
}

export interface DstPolicy {
  gap: 'shift' | 'skip';
  fold: 'once' | 'twice';
}

export type MissedPolicy = 'skip' | 'once' | 'all';

export interface RetryPolicy {
  /** Total attempts including the first. Default 3. */
  attempts: number;
  backoff?: { type: 'exponential' | 'fixed'; delayMs: number };
}

/** Everything a handler gets. Features land here (idempotency, steps, locks) so handlers never touch BullMQ. */
export interface JobContext<TData> {
  readonly data: TData;
  /** Child logger bound to queue, job name, id and attempt. */
  readonly log: Logger;
  readonly jobId: string;
  readonly jobName: string;
  readonly queue: string;
  /** 1 on the first attempt. */
  readonly attempt: number;
  readonly maxAttempts: number;
  /** Aborted when the worker shuts down past its drain deadline or the job times out. */
  readonly signal: AbortSignal;
  /** Stable across retries and redeliveries of the same logical run; pass it to external APIs. */
  readonly idempotencyKey: string;
  /** For scheduled runs, the time the occurrence was due (not when it started). */
  readonly nominalTime: Date | undefined;
  readonly isCatchUp: boolean;
  /**
   * Runs `fn` once per run across retries and redeliveries: a recorded step returns its recorded result.
   * Results must be JSON values. `fn` gets the step's own idempotency key, `s.key`
   * (`<idempotencyKey>/step/<id>`), for the external API it calls. See idempotency/steps.ts.
   */
  step<T>(id: string, fn: (step: StepInfo) => Promise<T>): Promise<T>;
  /**
   * A step whose effect is Redis writes: record them on `tx` (`tx.hincrby(key, field, 1)`, `tx.rpush(...)`,
   * `tx.call(command, key, ...args)`) and return the step's result; the writes and the step's record are
   * committed together in one script, only while this run still owns its lease. A crash or a lost lease
   * leaves neither, so the effect happens exactly once. See idempotency/redis-tx.ts.
   */
  redisStep: RedisStepFn;
  /**
   * Runs `fn` under a fenced Redis lock, for work that must not overlap across jobs. `fn` gets the fencing
   * token to pass with its writes and a signal that aborts if the lock (or this run) is lost.
   */
  lock: LockFn;
  /**
   * Reports progress (a number such as a percentage, or a small JSON object), shown in Bull Board and kept
   * on the job; it does not touch the run's record.
   */
  progress(value: number | Record<string, unknown>): Promise<void>;
  /** Enqueue another catalog job (validated). */
  enqueue: Enqueue;
  /** The platform's Redis command connection, for job-owned state (the demo jobs keep their ledgers here). */
  readonly redis: RedisClient;
}

export interface JobDefinition<S extends z.ZodObject = z.ZodObject, R = unknown> {
  readonly name: string;
  readonly queue: string;
  readonly schema: S;
  readonly handler: (ctx: JobContext<z.output<S>>) => Promise<R>;
  readonly retry?: RetryPolicy;
  readonly schedule?: ScheduleSpec;
  /** Derives the idempotency key from the payload; by default the job id is used. */
  readonly idempotencyKey?: (data: z.output<S>) => string;
  /**
   * How long a completed run keyed by `idempotencyKey` (or a scheduled occurrence) suppresses duplicates.
   * Default `IDEMPOTENCY_RETENTION_HOURS` (24 hours). Each completed run costs about 190 bytes of Redis for
   * its first minutes, then about 9 bytes for the rest of this window (docs/exactly-once.md, Compacted
   * runs): size it to how late a duplicate can really arrive (e.g. a webhook retried for 3 days).
   */
  readonly idempotencyWindow?: DurationLike;
  /** A run taking longer than this is aborted and counted as a failed attempt. Default 5 minutes. */
  readonly timeoutMs?: number;
  readonly description?: string;
  /**
   * BullMQ priority of this job's runs: 1 is the highest, up to 2,097,152. Unset, runs are unprioritised,
   * and BullMQ runs those before any prioritised one. `enqueue(..., { priority })` overrides it per run.
   */
  readonly priority?: number;
  /**
   * At most `max` runs of this job's queue start per `duration` across every worker (BullMQ's queue rate
   * limiter). It limits the whole queue, so every job of a queue that sets it must set the same.
   */
  readonly rateLimit?: { max: number; duration: DurationLike };
  /**
   * Set by `defineBatchJob`: the job's runs are fetched, handled and completed many at a time (see
   * BatchSpec); its `handler` only refuses a run one at a time.
   */
  readonly batch?: BatchSpec<z.output<S>>;
}

/** One job of a batch, as its batch handler sees it. */
export interface BatchItem<TData> {
  readonly jobId: string;
  readonly data: TData;
  /** 1 on the job's first attempt. */
  readonly attempt: number;
}

/** Everything a batch handler gets. */
export interface BatchContext<TData> {
  /** The batch's jobs, oldest first; each passed its schema (a job that does not fails alone, before the handler). */
  readonly jobs: readonly BatchItem<TData>[];
  readonly log: Logger;
  readonly jobName: string;
  readonly queue: string;
  /** Aborted when the batch times out or the worker shuts down past its drain deadline. */
  readonly signal: AbortSignal;
  /**
   * Redis writes committed in the script that completes the batch, only while the batch still holds its
   * lease: the writes and the jobs' completion happen together or not at all, so they happen once even if
   * the batch is handled again after a crash. Each write names one key, its first argument.
   */
  readonly tx: RedisTx;
  /**
   * Fails one job of the batch alone (a bad item the schema let through): it is not completed with the
   * batch, and its attempt is retried by its retry policy or dead-lettered with `reason` when it has none
   * left. The rest of the batch completes with `tx` when the handler returns.
   */
  fail(jobId: string, reason: string | Error): void;
  /** Enqueue another catalog job (validated). */
  enqueue: Enqueue;
  /** The platform's Redis command connection. */
  readonly redis: RedisClient;
}

export interface BatchSpec<TData> {
  /** At most this many jobs per batch (1..1000). */
  readonly size: number;
  /** Batches in flight at once in each worker process (1..64). Default 2. */
  readonly concurrency?: number;
  /**
   * How many completed jobs the queue keeps for inspection (each for at most 24 hours), as every catalog
   * job's queue does. Default 5,000; 0 deletes each job as it completes, which costs Redis least.
   */
  readonly keepCompleted?: number;
  /**
   * Handles a batch. Returning completes every job of the batch (with `ctx.tx`'s writes); throwing fails
   * one attempt of every job of the batch, each retried by the job's retry policy.
   */
  readonly handler: (ctx: BatchContext<TData>) => Promise<void>;
}

export interface BatchJobDefinition<S extends z.ZodObject> {
  readonly name: string;
  readonly queue: string;
  readonly schema: S;
  readonly batch: BatchSpec<z.output<S>>;
  readonly retry?: RetryPolicy;
  /** A batch taking longer than this is aborted and counted as a failed attempt of its jobs. Default 5 minutes. */
  readonly timeoutMs?: number;
  readonly description?: string;
}

// `any` here is deliberate: a catalog holds jobs of different payload types, and variance on the
// handler parameter would otherwise make JobDefinition<Specific> unassignable to the general type.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type AnyJob = JobDefinition<any, any>;

export type JobInput<J extends AnyJob> = J extends JobDefinition<infer S, unknown> ? z.input<S> : never;
export type JobData<J extends AnyJob> = J extends JobDefinition<infer S, unknown> ? z.output<S> : never;

export interface EnqueueOptions {
  /** Deduplicates: a second enqueue with the same id while the first exists is a no-op. */
  jobId?: string;
  delayMs?: number;
  priority?: number;
}

export type Enqueue = <J extends AnyJob>(job: J, data: JobInput<J>, opts?: EnqueueOptions) => Promise<{ id: string }>;

export function defineJob<S extends z.ZodObject, R>(def: JobDefinition<S, R>): JobDefinition<S, R> {
  return Object.freeze({ ...def });
}

/**
 * A job whose runs are handled in batches: the worker fetches up to `batch.size` of its waiting jobs in
 * one script call, validates each, hands the valid ones to `batch.handler` together and completes them
 * in one script call. Its queue holds no other job.
 */
export function defineBatchJob<S extends z.ZodObject>(def: BatchJobDefinition<S>): JobDefinition<S, void> {
  const { batch } = def;
  return Object.freeze({
    ...def,
    batch: Object.freeze({ ...batch }),
    // The worker runs a batch job's queue with its batch runner only; nothing runs its jobs one at a time.
    handler: async (ctx: JobContext<z.output<S>>) => {
      throw new Error(`${ctx.jobName} is a batch job: its jobs run in batches, by the worker's batch runner of queue ${ctx.queue}, not one at a time`);
    },
  });
}
