import type { RedisTx } from '../redis/redis-tx.js';

/*
 * The types of what a handler's context offers beyond its data (ctx.step, ctx.redisStep, ctx.lock): declared
 * here with the job definition, implemented by @tickwork/exactly-once.
 */

/** What a step's function gets. */
export interface StepInfo {
  /** The step id, as passed to `ctx.step`. */
  readonly id: string;
  /**
   * The step's own idempotency key, `<run's idempotency key>/step/<step id>`: the same on every retry,
   * redelivery and re-drive of the run, distinct per step. Pass it to the external API the step calls.
   */
  readonly key: string;
}

export type StepFn = <T>(id: string, fn: (step: StepInfo) => Promise<T>) => Promise<T>;

/** `ctx.redisStep(id, (tx, s) => value)`: see createSteps. */
export type RedisStepFn = <T>(id: string, fn: (tx: RedisTx, step: StepInfo) => T | Promise<T>) => Promise<T>;

export interface LockOptions {
  /** Lease length. Renewed every ttlMs/3 while `fn` runs; if renewal fails past the lease, `fn` is aborted. */
  ttlMs: number;
  /** How long to wait for a busy lock before throwing LockNotAcquiredError. Default: ttlMs. 0 = try once. */
  waitMs?: number;
  /** Aborts the wait and `fn` (e.g. the job's ctx.signal). */
  signal?: AbortSignal;
}

export interface HeldLock {
  readonly name: string;
  /** Strictly increasing per lock name across all holders: pass it with every write the lock guards. */
  readonly fencingToken: number;
  /** Aborted when the lock is lost or the caller's signal aborts. */
  readonly signal: AbortSignal;
}

/** `withLock` bound to a connection and prefix; handlers get it as `ctx.lock` bound to their signal. */
export type LockFn = <T>(name: string, opts: LockOptions, fn: (lock: HeldLock) => Promise<T>) => Promise<T>;
