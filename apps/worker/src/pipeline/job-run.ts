import { jobTally, type JobTally, type AnyJob, type Delivery, type Logger, type RedisClient } from '@tickwork/core';
import type { AbortSource, ExactlyOnceRun, RunExactlyOnceOptions, RunRecordPlace } from '@tickwork/exactly-once';
import type { QueueTimeline } from '@tickwork/operations';
import type { OverlapLeave, RunRecorder } from '@tickwork/schedules';
import { DelayedError, UnrecoverableError, type Job } from 'bullmq';
import type { ProcessorDeps } from './deps.js';

export type Labels = { queue: string; job: string };

/**
 * One delivery of a job on its way through the stages (pipeline/stages): what the job is, filled in by
 * validate and identify, and what the stages decide for it. Things a run may not need (its child logger)
 * are made on first use. It is also what aborts the delivery from outside (an AbortSource: shutdown, an
 * operator's cancel, through RunningJobs), in place of an AbortSignal per job, and the options of its
 * exactly-once frame (claim.ts), so a job start builds no options object and no closures for them.
 */
export class JobRun implements AbortSource, RunExactlyOnceOptions {
  /** This attempt's number: BullMQ's count, plus the attempts an occurrence made in its batch before it left (validate). */
  attempt: number;
  /** Its job's metrics (completed, failed, duration), one tally per queue and job name, reused by every run. */
  readonly metrics: JobTally;
  readonly labels: Labels;
  /** Its queue's counts for the charts (ProcessorDeps.timeline), or undefined (nothing counted). */
  readonly timeline: QueueTimeline | undefined;
  /** Set by validate. */
  def!: AnyJob;
  data: unknown;
  delivery!: Delivery;
  /** Set by identify. */
  key!: string;
  place!: RunRecordPlace;
  nominalTime: Date | undefined;
  /** The schedule's history of this run: only for runs of scheduled jobs (undefined costs nothing). */
  history: RunRecorder | undefined;
  /** Set by cancelGate's caller for an occurrence of a batch an operator cancelled (occurrence-batch.ts). */
  cancelledAs: Error | undefined;
  /** Set when a late occurrence is allowed to run by its missed-run policy (judgeLate). */
  lateCatchUp = false;
  preempt: RunExactlyOnceOptions['preempt'];
  /** Set by overlapPolicy: the claim that carries the run's start record (single Redis). */
  claimVia: RunExactlyOnceOptions['claimVia'];
  overlap: RunExactlyOnceOptions['overlap'];
  /** The overlap slot this run entered in its start record's call, freed by its end record's (overlapPolicy). */
  leave: OverlapLeave | undefined;
  /** Set by claim, for execute. */
  exactlyOnce!: ExactlyOnceRun;
  /** Set by execute: when the handler started (performance.now()), for its duration. */
  startedAt = 0;
  /** Set by claim: the stages after it, which it runs inside its frame. */
  next: Next | undefined;
  /** Set by claim: the rest of its RunExactlyOnceOptions. */
  onStepRecorded: (() => Promise<void>) | undefined;
  ackConnection: RedisClient | undefined;
  ackJobKey: string | undefined;
  lazy: boolean | undefined;
  /** What aborts the run from outside: itself, when the worker tracks it (RunningJobs); else nothing. */
  readonly signal: AbortSource | undefined;
  private childLog: Logger | undefined;
  aborted = false;
  reason: unknown;
  /** Abort listeners: nearly always none or one (the handler's run), so no array until a second. */
  private listener: ((reason: unknown) => void) | undefined;
  private moreListeners: ((reason: unknown) => void)[] | undefined;

  constructor(
    readonly deps: ProcessorDeps,
    readonly job: Job,
    readonly token: string | undefined,
    /** An occurrence run in its batch (occurrence-batch.ts): `job` is the job it would have been alone. */
    readonly carried = false,
  ) {
    this.signal = deps.running ? this : undefined;
    this.attempt = job.attemptsMade + 1;
    this.metrics = jobTally(job.queueName, job.name);
    this.labels = this.metrics.labels;
    this.timeline = deps.timeline?.queue(job.queueName);
  }

  /**
   * How long the job waited before this attempt started (BullMQ's processedOn, from when it was added or its
   * delay ended), for a job's first attempt only; -1 for every other (a retry's or a redelivery's wait is
   * not known: BullMQ keeps no time it became ready again).
   */
  waitMs(): number {
    const job = this.job;
    if (job.attemptsMade !== 0 || job.attemptsStarted > 1 || job.processedOn === undefined) return -1;
    return Math.max(0, job.processedOn - job.timestamp - (job.delay || 0));
  }

  /** How many attempts the run has in all: its job's, plus those it made in its batch before it left (validate). */
  get maxAttempts(): number {
    return (this.job.opts.attempts ?? 1) + (this.delivery?.scheduled?.a ?? 0);
  }

  /** Whether `err` ends the run for good: no retry follows (UnrecoverableError, or its attempts are spent). */
  failsForGood(err: unknown): boolean {
    return err instanceof UnrecoverableError || this.attempt >= this.maxAttempts;
  }

  get jobId(): string {
    return String(this.job.id);
  }

  /** The run's logger, bound to queue, job name, id and attempt; made on first use. */
  get log(): Logger {
    return (this.childLog ??= this.deps.log.child({ queue: this.job.queueName, job: this.job.name, jobId: this.job.id, attempt: this.attempt }));
  }

  /** True when `level` lines are written: a line that would not be is not built (nor its child logger). */
  logs(level: 'debug' | 'info'): boolean {
    return this.deps.log.isLevelEnabled(level);
  }

  /** RunExactlyOnceOptions.deliveryIsSole: asked as a lazily claimed run's step starts (ProcessorDeps.soleDelivery). */
  deliveryIsSole(): boolean {
    return this.deps.soleDelivery?.(this.job) === true;
  }

  /** The overlap policy skipped this occurrence (claim applies the policy): its history records it. */
  onSkip(runningKey: string): Promise<void> | undefined {
    return this.history?.skippedOverlap(`the previous run of the schedule was still running: ${runningKey}`);
  }

  /** Aborts this delivery (once): its listeners are called with `reason`. */
  abort(reason: unknown): void {
    if (this.aborted) return;
    this.aborted = true;
    this.reason = reason;
    const first = this.listener;
    const more = this.moreListeners;
    this.listener = this.moreListeners = undefined;
    first?.(reason);
    if (more) for (const l of more) l(reason);
  }

  onAbort(listener: (reason: unknown) => void): () => void {
    if (!this.listener) {
      this.listener = listener;
      return () => {
        if (this.listener === listener) this.listener = undefined;
      };
    }
    (this.moreListeners ??= []).push(listener);
    return () => {
      const i = this.moreListeners?.indexOf(listener) ?? -1;
      if (i >= 0) this.moreListeners?.splice(i, 1);
    };
  }

  /** Puts this delivery back for `ms` without consuming an attempt, and never returns. */
  readonly defer = async (ms: number): Promise<never> => {
    await this.job.moveToDelayed(Date.now() + ms, this.token);
    throw new DelayedError();
  };

  /**
   * After a Redis restart (RedisRestartedError): puts this delivery back at once without spending an attempt,
   * as `defer(0)`. The restarted Redis may not hold this delivery any more (the job was still waiting or
   * delayed when its data was last persisted, or its lock has expired): then there is nothing to move, the
   * job is there already (or BullMQ's stalled check takes it back), and the delivery still ends unfailed.
   * A method, not a field like `defer`: nothing made per job for a path nearly no run takes.
   */
  async handBack(): Promise<never> {
    try {
      await this.job.moveToDelayed(Date.now(), this.token);
    } catch (err) {
      if (this.logs('debug')) this.log.debug({ err: { message: (err as Error).message } }, 'the restarted Redis no longer holds this delivery; nothing to hand back');
    }
    throw new DelayedError();
  }
}

/** The rest of the stages after one, for `run` (stage.ts composes them). */
export type Next = (run: JobRun) => Promise<unknown>;
