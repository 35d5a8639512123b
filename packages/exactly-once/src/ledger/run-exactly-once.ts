import type { RedisClient } from '@tickwork/core';
import { OverlapGuard } from '../overlap/overlap-guard.js';
import { LeaseLostError, RunClaimRefusedError } from './errors.js';
import type { OwnerLiveness } from '@tickwork/core';
import { IdempotencyLedger, type ClaimOutcome, type JobRecordPlace, type LedgerRun } from './ledger.js';
import { newOwner } from './record-values.js';
import type { LedgerReply } from './ledger-batch.js';
import { completionWriter } from './ledger-batch.js';
import { duplicatesDeferred, duplicatesSuppressed, overlapSkipped } from './metrics.js';
import { claimRun, tookOver } from './claim-run.js';
import { LazyRun, recordUnclaimed } from './lazy-run.js';
import { logOf, lostLease, RunLease } from './run-lease.js';
import type { ExactlyOnce, ExactlyOnceRun, OverlapSkipResult, RunBody, RunExactlyOnceOptions } from './run-types.js';
import { createSteps, type StepHost, type Steps } from './steps.js';
import type { RedisStepFn, StepFn } from '@tickwork/core';


export function createExactlyOnce(
  redis: RedisClient,
  opts: { prefix: string; leaseMs?: number; windowMs?: number; unfinishedTtlMs?: number; fullRecordMs?: number; overlapPollMs?: number; liveness?: OwnerLiveness },
): ExactlyOnce {
  const ledger = new IdempotencyLedger(redis, opts);
  return {
    ledger,
    overlap: new OverlapGuard(redis, { prefix: opts.prefix, leaseMs: ledger.leaseMs, pollMs: opts.overlapPollMs ?? 500 }),
    redis,
    prefix: opts.prefix,
    liveness: opts.liveness,
  };
}





/**
 * Turns at-least-once deliveries into one effective run per idempotency key:
 * 1. claim the key: `done` returns the recorded result without running; `busy` (a live lease held by
 *    another delivery) defers this one; otherwise (new, failed before, or its holder died) run it;
 * 2. let `preempt` drop the run (missed-run policy), then, for scheduled occurrences, apply the overlap policy;
 * 3. run `body` while renewing the lease; record its result, or release the run on failure (steps kept).
 * A lazily claimed run (`opts.lazy`) does 1 at its first effect instead, and skips 2.
 */
export function runExactlyOnce<T>(
  eo: ExactlyOnce,
  opts: RunExactlyOnceOptions,
  body: RunBody<T>,
): Promise<T | unknown> {
  const place = opts.place;
  if (opts.lazy && place?.kind === 'job' && !opts.overlap && !opts.preempt) return runLazily(eo, opts, place, body);
  return runClaimedFirst(eo, opts, body);
}

async function runClaimedFirst<T>(eo: ExactlyOnce, opts: RunExactlyOnceOptions, body: RunBody<T>): Promise<T | unknown> {
  const claim = await claimRun(eo, opts);
  if (claim.kind !== 'claimed') return notOurs(opts, claim);
  const run = claim.run;
  if (claim.tookOver) tookOver(opts, claim);

  const preempted = opts.preempt ? await opts.preempt() : undefined;
  if (preempted) {
    if (!(await run.complete(preempted.result))) throw lostLease(opts, 'when recording that the run is not run');
    await preempted.recorded?.();
    return preempted.result;
  }

  const overlap = opts.overlap;
  if (overlap) {
    const decision = await (overlap.enter ? overlap.enter() : eo.overlap.enter(overlap.schedule, opts.key, overlap.policy, overlap.nominalTime));
    if (decision.kind === 'wait') {
      await run.release();
      logOf(opts).debug({ schedule: overlap.schedule }, 'previous occurrence still running; buffered');
      return opts.defer(decision.retryInMs);
    }
    if (decision.kind === 'skip') {
      const result: OverlapSkipResult = { skipped: 'overlap', runningKey: decision.runningKey };
      overlapSkipped.inc({ queue: opts.labels.queue, schedule: overlap.schedule, policy: overlap.policy });
      logOf(opts).warn(
        { schedule: overlap.schedule, policy: overlap.policy, idempotencyKey: opts.key, runningKey: decision.runningKey },
        'occurrence skipped: the previous run of the schedule is still running',
      );
      await run.complete(result);
      await opts.onSkip?.(decision.runningKey);
      return result;
    }
  }

  const lease = new RunLease(eo, opts);
  lease.keep(run);
  try {
    const result = await body(new RunHandle(run, lease, opts), opts);
    lease.stop();
    if (lease.lost) throw lease.lost;
    const recorded = record(opts, run, result);
    return recorded instanceof Promise ? await recorded : recorded; // not `await` on a plain value: a promise and a turn per job
  } catch (err) {
    lease.stop();
    await releaseAfter(err, run, opts);
    throw err;
  } finally {
    if (overlap && !overlap.left) await eo.overlap.release(overlap.schedule, opts.key);
  }
}

const claimedAlready = () => Promise.resolve();

/**
 * A lazily claimed run (see LazyRun): the body starts at once; the claim rides with its first effect. Not an
 * async function: the run's end (lazyEnded) is decided in the one callback the body's promise settles, so
 * a run that records in its acknowledgement waits in no promise of the frame's own.
 */
function runLazily<T>(eo: ExactlyOnce, opts: RunExactlyOnceOptions, place: JobRecordPlace, body: RunBody<T>): Promise<T | unknown> {
  const lease = new RunLease(eo, opts);
  const lazy = new LazyRun(eo, opts, place, newOwner(eo.liveness?.tag), lease);
  let ran: Promise<T>;
  try {
    ran = body(new RunHandle(lazy, lease, opts, lazy), opts);
  } catch (err) {
    return lazyFailed(opts, lazy, lease, err);
  }
  return ran.then(
    // A claim still in flight (a step the handler did not await) is waited for, whatever its outcome.
    (result) => (lazy.claimInFlight ? lazy.settled().then(() => lazyEnded(eo, opts, lazy, lease, result)) : lazyEnded(eo, opts, lazy, lease, result)),
    (err: unknown) => lazyFailed(opts, lazy, lease, err),
  );
}

/** The body of a lazily claimed run returned `result`: it is recorded, or the delivery ends as another's. */
function lazyEnded(eo: ExactlyOnce, opts: RunExactlyOnceOptions, lazy: LazyRun, lease: RunLease, result: unknown): unknown {
  lease.stop();
  // A refusal the handler caught still ends the delivery: the run is not this delivery's.
  if (lazy.refused) return refusedLazily(opts, lazy);
  if (lease.lost) return lazyFailed(opts, lazy, lease, lease.lost);
  const run = lazy.claimedRun;
  let recorded: unknown;
  try {
    recorded = run ? record(opts, run, result) : recordUnclaimed(eo, opts, lazy, result);
  } catch (err) {
    return lazyFailed(opts, lazy, lease, err); // a result that cannot be encoded, say
  }
  // The result itself when its record rides in the acknowledgement: no promise and no turn per job. A
  // record that could not be written gives the run back, as a failed body does.
  return recorded instanceof Promise ? recorded.catch((err: unknown) => lazyFailed(opts, lazy, lease, err)) : recorded;
}

/** A lazily claimed run failed (or could not record): its steps run before the claim are recorded, then the run is given back. */
async function lazyFailed(opts: RunExactlyOnceOptions, lazy: LazyRun, lease: RunLease, err: unknown): Promise<unknown> {
  lease.stop();
  // A step run before the claim is recorded (with the claim) before the run is given back: a retry resumes it.
  await lazy.recordUnrecorded();
  if (lazy.refused) return refusedLazily(opts, lazy);
  const run = lazy.claimedRun;
  if (run) await releaseAfter(err, run, opts);
  throw err;
}

/** A lazy claim refused: another delivery completed or holds the run (notOurs). */
function refusedLazily(opts: RunExactlyOnceOptions, lazy: LazyRun): unknown {
  const outcome = (lazy.refused as RunClaimRefusedError).outcome;
  // Only if the sole-delivery judgement was wrong (LazyRun.beforeEffect): a step ran beside the other delivery.
  if (lazy.stepsBeforeClaim > 0) logOf(opts).error({ idempotencyKey: opts.key, otherDelivery: outcome.kind, stepsRun: lazy.stepsBeforeClaim }, 'steps ran before a claim another delivery refused; they may have run twice');
  return notOurs(opts, outcome);
}

/**
 * What the handler's context gets from a run: its signal, its steps (made on first use) and its claim. A
 * class, not an object literal with getters: one is made per job, and a literal's getters cost far more.
 */
class RunHandle implements ExactlyOnceRun {
  private steps: Steps | undefined;

  constructor(
    private readonly host: StepHost,
    private readonly lease: RunLease,
    private readonly opts: RunExactlyOnceOptions,
    /** Set for a lazily claimed run: `claim` claims it. */
    private readonly lazy?: LazyRun,
  ) {}

  private stepsOf(): Steps {
    return (this.steps ??= createSteps(this.host, this.lease, this.opts.onStepRecorded));
  }

  get signal(): AbortSignal {
    return this.lease.signal;
  }

  get step(): StepFn {
    return this.stepsOf().step;
  }

  get redisStep(): RedisStepFn {
    return this.stepsOf().redisStep;
  }

  claim(): Promise<void> {
    return this.lazy ? this.lazy.claimed().then(nothing) : claimedAlready();
  }

  onAbort(listener: (reason: unknown) => void): () => void {
    return this.lease.onAbort(listener);
  }
}

const nothing = (): void => undefined;

/** Another delivery completed the run (its result is this delivery's) or holds it (come back later). */
function notOurs(opts: RunExactlyOnceOptions, claim: Exclude<ClaimOutcome, { kind: 'claimed' }>): unknown {
  if (claim.kind === 'done') {
    duplicatesSuppressed.inc(opts.labels);
    // A compacted run is known done, not how: no completion time, no result.
    const detail = claim.compacted ? { compacted: true } : { completedAt: claim.completedAt?.toISOString() };
    logOf(opts).info({ idempotencyKey: opts.key, ...detail }, 'duplicate suppressed');
    return claim.result;
  }
  duplicatesDeferred.inc(opts.labels);
  // Come back around when the holder's lease would run out, or its process would count as dead if it stays
  // silent, whichever is sooner; jitter spreads a burst of duplicates.
  const ms = Math.min(Math.max(Math.min(claim.leaseLeftMs, claim.holderDeadInMs ?? Infinity), 100), 5_000) + Math.floor(Math.random() * 100);
  logOf(opts).info({ idempotencyKey: opts.key, retryInMs: ms }, 'run held by another delivery; deferred');
  return opts.defer(ms);
}

/**
 * Records the result: written with or ahead of the job's acknowledgement when its connection is known (the
 * result itself when it rides there: nothing to wait on), else awaited.
 */
function record(opts: RunExactlyOnceOptions, run: LedgerRun, result: unknown): unknown {
  if (opts.ackConnection) {
    const written = run.completeAhead(completionWriter(opts.ackConnection), result, outcomeOf(opts), opts.ackJobKey);
    return written ? written.then(() => result) : result;
  }
  return run.complete(result).then((ok) => {
    if (!ok) throw lostLease(opts, 'when recording the result');
    return result;
  });
}

/** What a completion written ahead (or in the acknowledgement) reports once Redis ran it. */
function outcomeOf(opts: RunExactlyOnceOptions): (reply: LedgerReply | Error) => void {
  return (reply) => {
    if (reply instanceof Error) {
      logOf(opts).error({ idempotencyKey: opts.key, err: { message: reply.message } }, 'could not record the result; a redelivery may run it again');
    } else if (reply !== 1) {
      lostLease(opts, 'when recording the result; the job is acknowledged, and the delivery that took the run over records its own');
    }
  };
}

/** A failed attempt gives the run back (steps kept), unless the run was already lost or refused. */
async function releaseAfter(err: unknown, run: LedgerRun, opts: RunExactlyOnceOptions): Promise<void> {
  if (err instanceof LeaseLostError || err instanceof RunClaimRefusedError) return;
  await run.release().catch((e: Error) => logOf(opts).warn({ err: { message: e.message } }, 'could not release the run'));
}
