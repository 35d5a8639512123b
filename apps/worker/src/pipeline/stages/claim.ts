import { runExactlyOnce, type RunExactlyOnceOptions } from '@tickwork/runtime';
import { stallResetOnProgress } from '../../stall-progress.js';
import type { JobRun } from '../job-run.js';
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
export const claim: Stage = async (run, next) => {
  const { deps, job } = run;
  if (run.logs('debug')) run.log.debug({ idempotencyKey: run.key }, 'job started');
  const opts: RunExactlyOnceOptions = {
    key: run.key,
    place: run.place,
    log: () => run.log,
    labels: run.labels,
    signal: run.signal,
    defer: run.defer,
    overlap: run.overlap,
    onSkip: run.overlap && (() => run.history?.skippedOverlap('the previous run of the schedule was still running')),
    preempt: run.preempt,
    ackConnection: await deps.ackConnectionOf?.(job.queueName),
    onStepRecorded: (run.onStepRecorded = onStepRecordedOf(run)),
    lazy: claimsLazily(run),
  };
  return runExactlyOnce(deps.exactlyOnce, opts, (eo) => {
    run.exactlyOnce = eo;
    return next();
  });
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
  const jobKey = `${run.deps.exactlyOnce.prefix}:${job.queueName}:${run.jobId}`;
  return stallResetOnProgress({ job, jobKey, token: run.token, redis: run.deps.redis, log: run.log });
}
