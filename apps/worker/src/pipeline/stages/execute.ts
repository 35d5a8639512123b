import { RunClaimRefusedError } from '@tickwork/runtime';
import { UnrecoverableError } from 'bullmq';
import { JobCancelledError, WorkerShutdownError } from '../../errors.js';
import { runHandler } from '../../run-handler.js';
import { contextOf } from '../context.js';
import type { Stage } from '../stage.js';
import { cancelled } from './cancel-gate.js';

/**
 * execute: runs the handler under its timeout and counts the outcome (metrics, and the schedule's history
 * for runs of scheduled jobs). The last stage.
 */
export const execute: Stage = async (run) => {
  const { metrics } = run;
  // Not the histogram's startTimer: that makes two closures and a label object per job.
  const started = performance.now();
  try {
    const result = await runHandler(run.def, (signalOf) => contextOf(run, signalOf), run.exactlyOnce);
    metrics.completed.inc();
    if (run.logs('info')) run.log.info('job completed');
    if (run.history) await run.history.succeeded(); // not `await undefined`: that still costs a turn
    return result;
  } catch (err) {
    // Not an outcome of this run: another delivery completed or holds it (claim ends the delivery).
    if (err instanceof RunClaimRefusedError) throw err;
    if (err instanceof WorkerShutdownError) {
      // Hand the job back at once, without spending an attempt: it did not fail, this worker left.
      run.log.warn('interrupted by shutdown; handing the job back to the queue');
      return run.defer(0);
    }
    if (err instanceof JobCancelledError) return cancelled(run, err, 'while running');
    metrics.failed.inc();
    if (run.history) await run.history.failed(err, err instanceof UnrecoverableError || run.attempt >= (run.job.opts.attempts ?? 1));
    throw err;
  } finally {
    metrics.duration.observe((performance.now() - started) / 1000);
  }
};
