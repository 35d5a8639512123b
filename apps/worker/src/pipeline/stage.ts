import type { JobRun } from './job-run.js';

/**
 * One stage of a job's way through the worker (graphile-worker's middleware shape): it does its part and
 * calls `next` for the rest, or ends the job without calling it (a cancelled job, a suppressed duplicate).
 */
export type Stage = (run: JobRun, next: () => Promise<unknown>) => Promise<unknown>;

/** The stages as one function, run first to last; the last stage's `next` resolves to undefined. */
export function compose(stages: readonly Stage[]): (run: JobRun) => Promise<unknown> {
  const from = (i: number, run: JobRun): Promise<unknown> => {
    const stage = stages[i];
    return stage ? stage(run, () => from(i + 1, run)) : Promise.resolve(undefined);
  };
  return (run) => from(0, run);
}
