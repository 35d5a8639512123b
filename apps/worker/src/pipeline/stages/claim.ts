import { jobRecordKey, runExactlyOnce, type RunBody } from '@tickwork/exactly-once';
import type { RedisClient } from '@tickwork/core';
import { UnrecoverableError } from 'bullmq';
import { stallResetOnProgress, stalledTooOften } from '../../stall-progress.js';
import type { JobRun, Next } from '../job-run.js';
import type { Stage } from '../stage.js';

/**
 * claim: the run's exactly-once frame (runExactlyOnce) around the rest of the stages: claim the run's
 * ledger record (done → the recorded result, held → deferred), apply judgeLate's and overlapPolicy's
 * decisions, keep the lease while the rest runs, and record the result ahead of BullMQ's acknowledgement
 * (or give the run back on failure).
 *
 * When the claim happens (README, "When a run is claimed"): a job's first delivery whose run is recorded in
 * the job's own hash (a BullMQ-generated id, no idempotency key, not scheduled, not a re-drive) claims at
 * its first effect; everything else claims before it starts.
 */
export const claim: Stage = (run, next) => {
  const { deps, job } = run;
  // Public paths only: a job stalled too often without progress fails here (stall-progress.ts); rare, so awaited.
  const overLimit = deps.stallProgress?.overLimit;
  if (overLimit && job.stalledCounter > (deps.maxStalledCount ?? 2))
    return overLimit(job).then((over) => {
      if (over) throw new UnrecoverableError(stalledTooOften(job, deps.maxStalledCount ?? 2));
      return claimAcks(run, next);
    });
  return claimAcks(run, next);
};

/** The claim, once the queue's ack connection is known. */
function claimAcks(run: JobRun, next: Next): Promise<unknown> {
  const { deps, job } = run;
  // The queue's ack connection, resolved once per queue: a job start awaits nothing for it after that.
  const of = deps.ackConnectionOf;
  if (!of) return claimWith(run, next, undefined);
  let acks = acksBy.get(of);
  if (!acks) acksBy.set(of, (acks = new Map()));
  const ack = acks.get(job.queueName);
  if (ack) return claimWith(run, next, ack);
  return Promise.resolve(of(job.queueName)).then((redis) => {
    // The engine folds results into the connection's acknowledgements as it hands it out (Engine.ackConnectionOf).
    if (redis) acks?.set(job.queueName, redis);
    return claimWith(run, next, redis);
  });
}

/** Per processor (its ackConnectionOf), ack connections by queue; one keeps its identity across reconnects (ioredis). */
const acksBy = new WeakMap<NonNullable<JobRun['deps']['ackConnectionOf']>, Map<string, RedisClient>>();

function claimWith(run: JobRun, next: Next, ackConnection: RedisClient | undefined): Promise<unknown> {
  if (run.logs('debug')) run.log.debug({ idempotencyKey: run.key }, 'job started');
  // The run is its own RunExactlyOnceOptions (job-run.ts): these complete them.
  run.ackConnection = ackConnection;
  // A record under its own key: its completion names the job whose acknowledgement it rides in (ack-fold.ts).
  // An occurrence in a batch has no acknowledgement of its own: its completion is written ahead on the same
  // connection, so its batch's acknowledgement, after every occurrence's, runs after it.
  if (ackConnection && run.place.kind !== 'job' && !run.carried) run.ackJobKey = jobRecordKey(run.deps.exactlyOnce.prefix, run.job.queueName, run.jobId, ackConnection.isCluster);
  run.onStepRecorded = onStepRecordedOf(run);
  run.lazy = claimsLazily(run);
  run.next = next;
  return runExactlyOnce(run.deps.exactlyOnce, run, framed);
}

/** The stages after claim, inside its frame: the options it is given are the run itself (no closure per job). */
const framed: RunBody<unknown> = (eo, opts) => {
  const run = opts as JobRun;
  run.exactlyOnce = eo;
  return (run.next as Next)(run);
};

/**
 * A first delivery (BullMQ counts starts in `attemptsStarted`: a redelivery after a stall, a take-back or
 * a deferral starts again) of a run kept in its job's hash. No other delivery can hold such a run unless
 * this job stalled meanwhile, and a redelivery claims up front.
 */
function claimsLazily(run: JobRun): boolean {
  const { job } = run;
  return run.place.kind === 'job' && job.attemptsMade === 0 && job.attemptsStarted <= 1 && !(job.stalledCounter > 0);
}

/** The run's progress hook (stall-progress.ts): only for a job that stalled before. */
export function onStepRecordedOf(run: JobRun): (() => Promise<void>) | undefined {
  const { job } = run;
  if (!(job.stalledCounter > 0)) return undefined;
  const jobKey = run.place.kind === 'job' ? run.place.jobKey : jobRecordKey(run.deps.exactlyOnce.prefix, job.queueName, run.jobId, run.deps.redis.isCluster);
  const progress = run.deps.stallProgress;
  return progress && stallResetOnProgress({ job, jobKey, token: run.token, log: run.log, progress });
}
