import type { JobRun, Next } from './job-run.js';

/**
 * One stage of a job's way through the worker (graphile-worker's middleware shape): it does its part and
 * calls `next(run)` for the rest, or ends the job without calling it (a cancelled job, a suppressed
 * duplicate). `next` takes the run rather than closing over it, so the chain is built once, not per job.
 */
export type Stage = (run: JobRun, next: Next) => Promise<unknown>;

const end: Next = () => Promise.resolve(undefined);

/** The stages as one function, run first to last; the last stage's `next` resolves to undefined. */
export function compose(stages: readonly Stage[]): Next {
  return stages.reduceRight<Next>((next, stage) => (run) => stage(run, next), end);
}
