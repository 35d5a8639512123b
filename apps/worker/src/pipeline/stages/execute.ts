import { RunClaimRefusedError } from '@tickwork/exactly-once';
import { JobCancelledError, RedisRestartedError, WorkerShutdownError } from '../../errors.js';
import { runHandler, type AttemptEnds } from '../../run-handler.js';
import { contextOf } from '../context.js';
import type { JobRun } from '../job-run.js';
import type { Stage } from '../stage.js';
import { cancelled } from './cancel-gate.js';

/**
 * execute: runs the handler under its timeout and counts the outcome (metrics, the charts' counts of its
 * queue when the worker keeps them, and the schedule's history for runs of scheduled jobs). The last stage. The outcome is counted as the attempt settles (`ends`, in
 * runHandler's own callback), so a job's way from its handler back to BullMQ waits in no promise of its own.
 */
export const execute: Stage = (run) => {
  // A number on the run, for the duration its tally counts: no timer object or closure per job.
  run.startedAt = performance.now();
  return runHandler(run.def, contextOf, run.exactlyOnce, ends, run);
};

const ends: AttemptEnds<JobRun> = {
  succeeded(run, result) {
    const ms = countDuration(run);
    run.metrics.completed();
    run.timeline?.attempt('completed', ms, run.waitMs());
    if (run.logs('info')) run.log.info('job completed');
    return run.history ? run.history.succeeded(run.leave).then((left) => endedWith(run, left, result)) : result;
  },

  failed(run, err) {
    const ms = countDuration(run);
    // Not an outcome of this run: another delivery completed or holds it (claim ends the delivery).
    if (err instanceof RunClaimRefusedError) throw err;
    if (err instanceof WorkerShutdownError) {
      // Hand the job back at once, without spending an attempt: it did not fail, this worker left.
      run.log.warn('interrupted by shutdown; handing the job back to the queue');
      return run.defer(0);
    }
    // Redis restarted and may have lost this run's latest steps: run again from the ledger (logged once, by the watch).
    if (err instanceof RedisRestartedError) return run.handBack();
    if (err instanceof JobCancelledError) return cancelled(run, err, 'while running');
    run.metrics.failed();
    const final = run.failsForGood(err);
    run.timeline?.attempt(final ? 'failed' : 'retried', ms, run.waitMs());
    if (!run.history) throw err;
    return run.history.failed(err, final, run.leave).then((left) => {
      endedWith(run, left, undefined);
      throw err;
    });
  },
};

/** The end record freed the run's overlap slot (run.leave): the run's frame leaves it as it is. */
function endedWith<T>(run: JobRun, left: boolean, result: T): T {
  if (left && run.overlap) run.overlap.left = true;
  return result;
}

/** The handler's time, from execute's start to the attempt's end, in its job's tally (every attempt, however it ends); in ms. */
function countDuration(run: JobRun): number {
  const ms = performance.now() - run.startedAt;
  run.metrics.observe(ms / 1000);
  return ms;
}
