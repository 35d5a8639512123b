import { isCatchUpOf, lockFn, onStepRecordedFor, type Enqueue, type JobContext, type LockFn } from '@tickwork/runtime';
import type { JobRun } from './job-run.js';

/**
 * The handler's context. What a handler may not use is made on first use (its logger, steps, lock
 * function). Effects that need the run to be this delivery's (`lock`, `enqueue`; steps claim by
 * themselves) wait for a lazily claimed run's claim first.
 */
export function contextOf(run: JobRun, signalOf: () => AbortSignal): JobContext<unknown> {
  const { job, deps } = run;
  const eo = run.exactlyOnce;
  const ctx: JobContext<unknown> = {
    data: run.data,
    get log() {
      return run.log;
    },
    jobId: run.jobId,
    jobName: job.name,
    queue: job.queueName,
    attempt: run.attempt,
    maxAttempts: job.opts.attempts ?? 1,
    get signal() {
      return signalOf();
    },
    idempotencyKey: run.key,
    nominalTime: run.nominalTime,
    isCatchUp: isCatchUpOf(run.delivery) || run.lateCatchUp,
    get step() {
      return eo.step;
    },
    get redisStep() {
      return eo.redisStep;
    },
    get lock(): LockFn {
      const lock = lockFn(deps.exactlyOnce.redis, deps.exactlyOnce.prefix, signalOf());
      return (name, opts, fn) => eo.claim().then(() => lock(name, opts, fn));
    },
    get enqueue(): Enqueue {
      return (def, data, opts) => eo.claim().then(() => deps.enqueue(def, data, opts));
    },
    redis: deps.redis,
    progress: (value) => job.updateProgress(value),
  };
  onStepRecordedFor(ctx, run.onStepRecorded); // pgStep's progress, recorded outside the ledger
  return ctx;
}
