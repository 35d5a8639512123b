import { jobsCancelled } from '@tickwork/core';
import { UnrecoverableError } from 'bullmq';
import { JobCancelledError } from '../../errors.js';
import type { JobRun, Next } from '../job-run.js';
import type { Stage } from '../stage.js';

/**
 * cancelGate: a job an operator cancelled before it started ends here, without running. Checked in
 * memory (the listener follows requests by pub/sub): no round trip on a job's start.
 */
export const cancelGate: Stage = (run, next) => {
  // An occurrence of a batch an operator cancelled (occurrence-batch.ts): cancelled as if asked by its own id.
  if (run.cancelledAs) return cancelled(run, run.cancelledAs, 'before it started');
  const cancels = run.deps.cancels;
  if (!cancels) return next(run);
  // Not async: a job start that finds the requests loaded and none pending costs no promise of its own.
  if (!cancels.loaded) return cancels.ready.then(() => gate(run, next));
  return gate(run, next);
};

function gate(run: JobRun, next: Next): Promise<unknown> {
  const request = run.deps.cancels?.pending(run.job.queueName, run.jobId);
  if (request) return cancelled(run, JobCancelledError.of(request), 'before it started');
  return next(run);
}

/**
 * A cancelled run ends failed with `cancelled by ...` and UnrecoverableError (no retry), which the DLQ
 * move leaves alone (no dead letter, no alert); it counts as cancelled, not failed. The request is
 * cleared, so an operator's retry of the job runs it.
 */
export async function cancelled(run: JobRun, err: Error, when: string): Promise<never> {
  jobsCancelled.inc(run.labels);
  run.log.info({ reason: err.message }, `job cancelled ${when}`);
  await run.history?.cancelled(err.message);
  await run.deps.cancels?.finished(run.job.queueName, run.jobId);
  throw new UnrecoverableError(err.message);
}
