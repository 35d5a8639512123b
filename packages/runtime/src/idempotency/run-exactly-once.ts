import type { Redis } from 'ioredis';
import type { Logger } from '../logger.js';
import { OverlapGuard, type OverlapPolicy } from '../overlap/overlap-guard.js';
import { LeaseLostError } from './errors.js';
import type { OwnerLiveness } from '../recovery/worker-registry.js';
import { IdempotencyLedger, newOwner, type ClaimOutcome, type LedgerRun, type RunRecordPlace } from './ledger.js';
import { completionWriter } from './ledger-batch.js';
import { duplicatesDeferred, duplicatesSuppressed, leasesLost, leaseTakeovers, overlapSkipped } from './metrics.js';
import { LeaseKeeper } from './lease-keeper.js';
import { createSteps, type RedisStepFn, type StepFn, type Steps } from './steps.js';

/** The exactly-once machinery one worker process shares across its jobs. */
export interface ExactlyOnce {
  ledger: IdempotencyLedger;
  overlap: OverlapGuard;
  redis: Redis;
  prefix: string;
  /** The worker registry (recovery/): runs are claimed under its process tag, and a dead holder's lease is taken over. */
  liveness?: OwnerLiveness | undefined;
}

export function createExactlyOnce(
  redis: Redis,
  opts: { prefix: string; leaseMs?: number; windowMs?: number; unfinishedTtlMs?: number; overlapPollMs?: number; liveness?: OwnerLiveness },
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

/** What the handler's context gets from the run. */
export interface ExactlyOnceRun {
  /** Aborted when the worker aborts the job or the run's lease is lost. */
  signal: AbortSignal;
  step: StepFn;
  redisStep: RedisStepFn;
}

export interface RunExactlyOnceOptions {
  key: string;
  /** Where the run's record lives, and so how long it suppresses duplicates (default: its own key, the ledger's window). */
  place?: RunRecordPlace | undefined;
  log: Logger;
  labels: { queue: string; job: string };
  /** The worker's signal for this delivery (shutdown, cancel). */
  signal?: AbortSignal | undefined;
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
  ackConnection?: Redis | undefined;
  /** Told when a step of this run is newly recorded (the run made progress). */
  onStepRecorded?: (() => Promise<void>) | undefined;
  /** Set for scheduled occurrences whose policy is not `allow`. */
  overlap?: { schedule: string; policy: OverlapPolicy; nominalTime: Date | undefined } | undefined;
  /** Called once when the overlap policy skips this occurrence (the schedule's history records it). */
  onSkip?: (() => Promise<void> | undefined) | undefined;
  /**
   * Called once the run is claimed, before the overlap policy. Returning `{ result }` completes the run with
   * that result instead of running it (a late occurrence the missed-run policy drops): the ledger records
   * it as done, so a duplicate is not run later either; `recorded` is called after that.
   */
  preempt?: (() => Promise<{ result: unknown; recorded?: () => Promise<void> } | undefined>) | undefined;
}

/** The result a skipped occurrence completes with (also recorded in the ledger). */
export interface OverlapSkipResult {
  skipped: 'overlap';
  runningKey: string;
}

/**
 * Turns at-least-once deliveries into one effective run per idempotency key:
 * 1. claim the key: `done` returns the recorded result without running; `busy` (a live lease held by
 *    another delivery) defers this one; otherwise (new, failed before, or its holder died) run it;
 * 2. let `preempt` drop the run (missed-run policy), then, for scheduled occurrences, apply the overlap policy;
 * 3. run `body` while renewing the lease; record its result, or release the run on failure (steps kept).
 */
export async function runExactlyOnce<T>(
  eo: ExactlyOnce,
  opts: RunExactlyOnceOptions,
  body: (run: ExactlyOnceRun) => Promise<T>,
): Promise<T | unknown> {
  const claim = await claimRun(eo, opts);
  if (claim.kind === 'done') {
    duplicatesSuppressed.inc(opts.labels);
    opts.log.info({ idempotencyKey: opts.key, completedAt: claim.completedAt?.toISOString() }, 'duplicate suppressed');
    return claim.result;
  }
  if (claim.kind === 'busy') {
    duplicatesDeferred.inc(opts.labels);
    // Come back around when the holder's lease would run out; jitter spreads a burst of duplicates.
    const ms = Math.min(Math.max(claim.leaseLeftMs, 100), 5_000) + Math.floor(Math.random() * 100);
    opts.log.info({ idempotencyKey: opts.key, retryInMs: ms }, 'run held by another delivery; deferred');
    return opts.defer(ms);
  }
  const run = claim.run;
  if (claim.tookOver) {
    leaseTakeovers.inc(opts.labels);
    const holderDead = 'holderDead' in claim;
    opts.log.warn({ idempotencyKey: opts.key, recordedSteps: run.recordedStepCount, holderDead }, 'took over a run whose holder stopped renewing its lease');
  }

  const preempted = opts.preempt ? await opts.preempt() : undefined;
  if (preempted) {
    if (!(await run.complete(preempted.result))) throw lostLease(opts, 'when recording that the run is not run');
    await preempted.recorded?.();
    return preempted.result;
  }

  const overlap = opts.overlap;
  if (overlap) {
    const decision = await eo.overlap.enter(overlap.schedule, opts.key, overlap.policy, overlap.nominalTime);
    if (decision.kind === 'wait') {
      await run.release();
      opts.log.debug({ schedule: overlap.schedule }, 'previous occurrence still running; buffered');
      return opts.defer(decision.retryInMs);
    }
    if (decision.kind === 'skip') {
      const result: OverlapSkipResult = { skipped: 'overlap', runningKey: decision.runningKey };
      overlapSkipped.inc({ queue: opts.labels.queue, schedule: overlap.schedule, policy: overlap.policy });
      opts.log.warn(
        { schedule: overlap.schedule, policy: overlap.policy, idempotencyKey: opts.key, runningKey: decision.runningKey },
        'occurrence skipped: the previous run of the schedule is still running',
      );
      await run.complete(result);
      await opts.onSkip?.();
      return result;
    }
  }

  const lease = keepLease(eo, run, opts);
  let steps: Steps | undefined;
  const stepsOf = () => (steps ??= createSteps(run, () => lease.signal, opts.onStepRecorded));
  try {
    const result = await body({
      get signal() {
        return lease.signal;
      },
      get step() {
        return stepsOf().step;
      },
      get redisStep() {
        return stepsOf().redisStep;
      },
    });
    lease.stop();
    if (lease.lost) throw lease.lost;
    if (opts.ackConnection) {
      await run.completeAhead(completionWriter(opts.ackConnection), result, (reply) => {
        if (reply instanceof Error) {
          opts.log.error({ idempotencyKey: opts.key, err: { message: reply.message } }, 'could not record the result; a redelivery may run it again');
        } else if (reply !== 1) {
          lostLease(opts, 'when recording the result; the job is acknowledged, and the delivery that took the run over records its own');
        }
      });
      return result;
    }
    if (!(await run.complete(result))) throw lostLease(opts, 'when recording the result');
    return result;
  } catch (err) {
    lease.stop();
    if (!(err instanceof LeaseLostError)) {
      await run.release().catch((e: Error) => opts.log.warn({ err: { message: e.message } }, 'could not release the run'));
    }
    throw err;
  } finally {
    if (overlap) await eo.overlap.leave(overlap.schedule, opts.key).catch(() => false);
  }
}

/**
 * Claims the run. Only when another delivery holds a live lease (rare: a duplicate, or a redelivery after
 * a crash) is the worker registry asked whether the holder's process is dead; if so the lease is taken
 * over at once, compare-and-set on that holder, instead of waiting for it to expire. The registry is a
 * different key than the run's record, so it is read here, not in the claim's script (Redis Cluster).
 */
async function claimRun(eo: ExactlyOnce, opts: RunExactlyOnceOptions): Promise<ClaimOutcome | (ClaimOutcome & { holderDead: true })> {
  const owner = newOwner(eo.liveness?.tag);
  const claim = await eo.ledger.claim(opts.key, opts.place, owner);
  if (claim.kind !== 'busy' || !eo.liveness) return claim;
  // A failed check changes nothing: the delivery is deferred as if the holder were alive.
  if (!(await eo.liveness.isDead(claim.holder).catch(() => false))) return claim;
  const again = await eo.ledger.claim(opts.key, opts.place, owner, claim.holder);
  return again.kind === 'claimed' ? { ...again, holderDead: true } : again;
}

function lostLease(opts: RunExactlyOnceOptions, detail: string): LeaseLostError {
  leasesLost.inc(opts.labels);
  const err = new LeaseLostError(opts.key, detail);
  opts.log.error({ idempotencyKey: opts.key }, err.message);
  return err;
}

/** One renewal timer per ledger, shared by its runs (see LeaseKeeper). */
const keepers = new WeakMap<IdempotencyLedger, LeaseKeeper>();

/**
 * Keeps the run's ledger lease (and its overlap slot) renewed while the body runs. The run's signal
 * aborts when the worker aborts the delivery, or when renewal is refused or keeps failing until the lease
 * must have expired: someone else may own the run then. The signal is made on first use (most no-op and
 * short handlers never look at it), linked to the worker's signal by a listener (AbortSignal.any costs
 * far more per call and in GC).
 */
function keepLease(eo: ExactlyOnce, run: LedgerRun, opts: RunExactlyOnceOptions) {
  let controller: AbortController | undefined;
  let lost: LeaseLostError | undefined;
  const workerSignal = opts.signal;
  const onWorkerAbort = () => controller?.abort(workerSignal?.reason);
  let keeper = keepers.get(eo.ledger);
  if (!keeper) keepers.set(eo.ledger, (keeper = new LeaseKeeper(eo.ledger.leaseMs)));
  const overlap = opts.overlap;
  const unkeep = keeper.keep({
    renew: async () => {
      const ok = await run.renew();
      if (overlap) await eo.overlap.renew(overlap.schedule, opts.key);
      return ok;
    },
    lose: (detail) => {
      if (lost) return;
      lost = lostLease(opts, detail);
      controller?.abort(lost);
    },
  });
  return {
    get signal(): AbortSignal {
      if (!controller) {
        controller = new AbortController();
        if (lost) controller.abort(lost);
        else if (workerSignal?.aborted) controller.abort(workerSignal.reason);
        else workerSignal?.addEventListener('abort', onWorkerAbort, { once: true });
      }
      return controller.signal;
    },
    get lost() {
      return lost;
    },
    stop() {
      unkeep();
      if (controller) workerSignal?.removeEventListener('abort', onWorkerAbort);
    },
  };
}
