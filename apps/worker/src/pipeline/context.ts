import { isCatchUpOf, traced, tracesOn, type Enqueue, type JobContext, type LockFn, type Logger, type RedisStepFn, type StepFn, type RedisClient } from '@tickwork/core';
import { lockFn, onStepRecordedFor } from '@tickwork/exactly-once';
import type { JobRun } from './job-run.js';

/**
 * The handler's context. What a handler may not use is made on first use (its logger, steps, lock
 * function). Effects that need the run to be this delivery's (`lock`, `enqueue`; steps claim by
 * themselves) wait for a lazily claimed run's claim first.
 */
export function contextOf(signalOf: () => AbortSignal, run: JobRun): JobContext<unknown> {
  const ctx = new RunContext(run, signalOf);
  onStepRecordedFor(ctx, run.onStepRecorded); // pgStep's progress, recorded outside the ledger
  return ctx;
}

/**
 * A class with its getters on the prototype, not an object literal with getters: one context is made per
 * job, and a literal's getters (and per-job closures) were a measurable part of a no-op job's CPU. What a
 * handler may pass on as a function (`step`, `enqueue`, `progress`, ...) is a function needing no `this`.
 */
class RunContext implements JobContext<unknown> {
  readonly data: unknown;
  readonly jobId: string;
  readonly attempt: number;
  readonly idempotencyKey: string;
  readonly nominalTime: Date | undefined;
  readonly isCatchUp: boolean;
  readonly redis: RedisClient;

  constructor(
    private readonly run: JobRun,
    private readonly signalOf: () => AbortSignal,
  ) {
    this.data = run.data;
    this.jobId = run.jobId;
    this.attempt = run.attempt;
    this.idempotencyKey = run.key;
    this.nominalTime = run.nominalTime;
    this.isCatchUp = isCatchUpOf(run.delivery) || run.lateCatchUp;
    this.redis = run.deps.redis;
  }

  get log(): Logger {
    return this.run.log;
  }

  get jobName(): string {
    return this.run.job.name;
  }

  get queue(): string {
    return this.run.job.queueName;
  }

  get maxAttempts(): number {
    return this.run.maxAttempts;
  }

  get signal(): AbortSignal {
    return this.signalOf();
  }

  get step(): StepFn {
    const step = this.run.exactlyOnce.step;
    // Traces on: a span per step (its id; replayed or run), a child of the run's (telemetry/traces.ts).
    return tracesOn() ? (id, fn) => traced('tickwork.step', { 'tickwork.step.id': id, 'tickwork.step.kind': 'step' }, () => step(id, fn)) : step;
  }

  get redisStep(): RedisStepFn {
    const step = this.run.exactlyOnce.redisStep;
    return tracesOn() ? (id, fn) => traced('tickwork.step', { 'tickwork.step.id': id, 'tickwork.step.kind': 'redis' }, () => step(id, fn)) : step;
  }

  get lock(): LockFn {
    const { run } = this;
    const lock = lockFn(run.deps.exactlyOnce.redis, run.deps.exactlyOnce.prefix, this.signalOf());
    return (name, opts, fn) => run.exactlyOnce.claim().then(() => lock(name, opts, fn));
  }

  get enqueue(): Enqueue {
    const { run } = this;
    return (def, data, opts) => run.exactlyOnce.claim().then(() => run.deps.enqueue(def, data, opts));
  }

  get progress(): JobContext<unknown>['progress'] {
    const { job } = this.run;
    return (value) => job.updateProgress(value);
  }
}
