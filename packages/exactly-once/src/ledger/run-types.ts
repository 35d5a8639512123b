import type { Logger, OverlapPolicy, OwnerLiveness, RedisClient, RedisStepFn, StepFn } from '@tickwork/core';
import type { EnterOutcome, OverlapGuard } from '../overlap/overlap-guard.js';
import type { ClaimVia, IdempotencyLedger, RunRecordPlace } from './ledger.js';

/*
 * The types of a run's exactly-once frame (run-exactly-once.ts), in a file of their own so the frame's
 * parts (claim-run.ts, lazy-run.ts, run-lease.ts) and the frame import them without importing each other.
 */

/** The exactly-once machinery one worker process shares across its jobs. */
export interface ExactlyOnce {
  ledger: IdempotencyLedger;
  overlap: OverlapGuard;
  redis: RedisClient;
  prefix: string;
  /** The worker registry (recovery/): runs are claimed under its process tag, and a dead holder's lease is taken over. */
  liveness?: OwnerLiveness | undefined;
}

/** What the handler's context gets from the run. */
export interface ExactlyOnceRun {
  /** Aborted when the worker aborts the job or the run's lease is lost. */
  signal: AbortSignal;
  step: StepFn;
  redisStep: RedisStepFn;
  /**
   * Resolves once this delivery owns the run: at once for a run claimed up front; a lazily claimed run
   * claims here (effects outside steps that need the run first: `ctx.lock`, `ctx.enqueue`). Rejects with
   * RunClaimRefusedError when another delivery completed or holds the run.
   */
  claim(): Promise<void>;
  /** Calls `listener` once when the run is aborted, without making `signal` (RunLease.onAbort). */
  onAbort(listener: (reason: unknown) => void): () => void;
}

export interface RunExactlyOnceOptions {
  key: string;
  /** Where the run's record lives, and so how long it suppresses duplicates (default: its own key, the ledger's window). */
  place?: RunRecordPlace | undefined;
  /** The run's logger, or a function making it on first use (it is needed only on the rarer paths). */
  log: Logger | (() => Logger);
  labels: { queue: string; job: string };
  /** What aborts this delivery from outside (shutdown, cancel): an AbortSignal, or the worker's cheaper AbortSource. */
  signal?: AbortSignal | AbortSource | undefined;
  /**
   * Puts this delivery back for `ms` without consuming an attempt, and never returns (BullMQ:
   * `job.moveToDelayed(...)` then `throw new DelayedError()`).
   */
  defer: (ms: number) => Promise<never>;
  /**
   * The connection the queue acknowledges this job on (BullMQ's moveToFinished). When given, the result is
   * written there ahead of the acknowledgement instead of awaited on the ledger's connection: one round
   * trip less per run, and Redis still records the result before it acknowledges the job.
   */
  ackConnection?: RedisClient | undefined;
  /** The job's key (its BullMQ hash), with `ackConnection`: the completion rides in that job's acknowledgement (ack-fold.ts). */
  ackJobKey?: string | undefined;
  /** Told when a step of this run is newly recorded (the run made progress). */
  onStepRecorded?: (() => Promise<void>) | undefined;
  /**
   * Sends the run's claim in a call of the caller's own instead of the ledger's batch (ClaimVia): the worker
   * claims a scheduled run with its start record in one call on a single Redis. Not for a lazily claimed run.
   */
  claimVia?: ClaimVia | undefined;
  /** Set for scheduled occurrences whose policy is not `allow`. */
  overlap?: RunOverlap | undefined;
  /** Called once when the overlap policy skips this occurrence, with the run still holding the slot (the schedule's history records it). */
  onSkip?: ((runningKey: string) => Promise<void> | undefined) | undefined;
  /**
   * Called once the run is claimed, before the overlap policy. Returning `{ result }` completes the run with
   * that result instead of running it (a late occurrence the missed-run policy drops): the ledger records
   * it as done, so a duplicate is not run later either; `recorded` is called after that.
   */
  preempt?: (() => Promise<{ result: unknown; recorded?: () => Promise<void> } | undefined>) | undefined;
  /**
   * Claim the run at its first effect rather than before `body` (lazy-run.ts). Honoured only for a run
   * recorded in its job's hash (`place.kind === 'job'`) without `overlap` or `preempt`; the caller asks
   * for it only on a job's first delivery (README, "When a run is claimed").
   */
  lazy?: boolean | undefined;
  /**
   * For a lazily claimed run: true while no other delivery of its job can hold or have completed the run
   * (the job's hash held no run record when it was delivered, and nothing can have delivered it again
   * since). Asked as each `ctx.step` starts before the claim: then the step runs at once, and its claim
   * rides with its record (LazyRun). Without it, a step claims first.
   */
  deliveryIsSole?(): boolean;
}

/**
 * What runs inside the frame: given the run, and the options the frame was called with (so a caller whose
 * options are its own per-job object, as the worker's are, needs no closure per job to find its job).
 */
export type RunBody<T> = (run: ExactlyOnceRun, opts: RunExactlyOnceOptions) => Promise<T>;

/** The result a skipped occurrence completes with (also recorded in the ledger). */
export interface OverlapSkipResult {
  skipped: 'overlap';
  runningKey: string;
}

/**
 * What aborts a delivery from outside (shutdown, an operator's cancel) without an AbortSignal of its own:
 * the worker keeps one per running job (an AbortController per job was a measurable part of its CPU per
 * job, and most runs are never aborted). `onAbort` registers a listener called once on abort (only while
 * not yet aborted: check `aborted` first) and returns the function that removes it.
 */
export interface AbortSource {
  readonly aborted: boolean;
  readonly reason: unknown;
  onAbort(listener: (reason: unknown) => void): () => void;
}

/** A scheduled occurrence's overlap policy, as the run applies it. */
export interface RunOverlap {
  schedule: string;
  policy: OverlapPolicy;
  nominalTime: Date | undefined;
  /**
   * Enters the schedule's slot in a call of the caller's own (its start record's, on a single Redis:
   * OVERLAP_ENTER_FN included in that script) instead of the guard's own call. Same outcomes as
   * OverlapGuard.enter.
   */
  enter?: (() => Promise<EnterOutcome>) | undefined;
  /** Set by the caller once a call of its own (its end record's) has freed the slot: the run's end then leaves it as it is. */
  left?: boolean | undefined;
}
