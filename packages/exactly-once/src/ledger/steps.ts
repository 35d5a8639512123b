import { LeaseLostError, StepError } from './errors.js';
import { RedisTx } from '@tickwork/core';
import type { RedisStepFn, StepFn, StepInfo } from '@tickwork/core';




/** A step's idempotency key (see StepInfo.key): one rule for every place that names it. */
export function stepKey(runKey: string, stepId: string): string {
  return `${runKey}/step/${stepId}`;
}

/** A step id is a non-empty string of at most 512 characters: one rule for every form of step. */
export function assertStepId(id: unknown): asserts id is string {
  if (typeof id !== 'string' || id.length === 0 || id.length > 512) {
    throw new StepError(String(id), 'the step id must be a non-empty string of at most 512 characters, e.g. "charge:cus_001"');
  }
}

/**
 * Steps recorded outside the ledger (pgStep) report progress through the handler's context: the worker
 * registers the run's `onStepRecorded` for the context it builds, and such a step calls
 * `stepRecordedBy(ctx)` after it commits. A WeakMap, so nothing outlives the context and the public
 * context type stays free of plumbing.
 */
const progressHooks = new WeakMap<object, () => Promise<void>>();

/** @internal the worker: `hook` is told of steps `ctx`'s run records outside the ledger. */
export function onStepRecordedFor(ctx: object, hook: (() => Promise<void>) | undefined): void {
  if (hook) progressHooks.set(ctx, hook);
}

/** @internal a step form outside the ledger: the run of `ctx` recorded a new step. */
export async function stepRecordedBy(ctx: object): Promise<void> {
  await progressHooks.get(ctx)?.();
}

/**
 * The run a step records into: a claimed LedgerRun, or a LazyRun that claims on its first effect
 * (lazy-run.ts). A `ctx.step`'s function runs only once `beforeEffect` (when given) has resolved: the
 * LazyRun's claim, or nothing when no other delivery can hold the run (its claim then rides with the record).
 */
export interface StepHost {
  readonly idempotencyKey: string;
  recordedStep(id: string): { value: unknown } | undefined;
  recordStep(id: string, value: unknown): Promise<boolean>;
  recordTxStep(id: string, value: unknown, commands: readonly (string | number)[][]): Promise<boolean>;
  beforeEffect?(): Promise<unknown> | undefined;
}

export interface Steps {
  step: StepFn;
  redisStep: RedisStepFn;
}

/** What a step checks before it runs: whether the run was aborted, and why (RunLease; its signal is not made for it). */
export interface StepAbort {
  readonly aborted: boolean;
  readonly signal: AbortSignal;
}

/**
 * The two step forms of one run, sharing its recorded results and its ids:
 *
 * - `ctx.step(id, fn)` runs `fn` once per run across retries and redeliveries: a recorded step returns its
 *   recorded result without running `fn` again. The gap that remains is between `fn`'s effect and the
 *   recording of its result: a crash exactly there repeats the step. Close it by passing the step's key
 *   (`s.key`) to the external API, as the billing job does.
 * - `ctx.redisStep(id, (tx, s) => value)`: the effect is a set of Redis writes recorded on `tx` and
 *   committed in one script with the step's record, only while the run still owns its lease. No gap: the
 *   writes and the record happen together or not at all (redis-tx.ts).
 *
 * Results must be JSON values (they are stored in Redis); a Date comes back as its ISO string.
 * `onRecorded` is told when a step is newly recorded (progress), not when one is replayed.
 * `abort`: the run's RunLease, or a function giving the signal steps check.
 */
export function createSteps(run: StepHost, abort: StepAbort | (() => AbortSignal), onRecorded?: () => Promise<void>): Steps {
  return new RunSteps(run, abort, onRecorded);
}

/**
 * createSteps' steps. One step is one call of `once`, with the step's function passed as it is: a step
 * costs no closures, no second async function and no result object of its own (a Redis step's allocations
 * were the largest share of its extra garbage per job). Most runs have one step at a time in flight: its id
 * is kept in a field, and a Set is made only for a second one.
 */
class RunSteps implements Steps {
  private inFlight: string | undefined;
  private moreInFlight: Set<string> | undefined;

  constructor(
    private readonly run: StepHost,
    private readonly abort: StepAbort | (() => AbortSignal),
    private readonly onRecorded: (() => Promise<void>) | undefined,
  ) {}

  readonly step: StepFn = (id, fn) => this.once(id, fn, undefined);
  readonly redisStep: RedisStepFn = (id, fn) => this.once(id, undefined, fn);

  /** One step: `fn` for a `ctx.step`, `txFn` for a `ctx.redisStep`. */
  private async once<T>(id: string, fn: ((step: StepInfo) => Promise<T>) | undefined, txFn: ((tx: RedisTx, step: StepInfo) => T | Promise<T>) | undefined): Promise<T> {
    assertStepId(id);
    const { run } = this;
    // A step's function has effects outside the ledger, so it runs only once this delivery owns the run (or
    // no other can: LazyRun.beforeEffect). A Redis step's effects commit with its record, which claims a new
    // run in the same script (lazy-run.ts).
    if (fn) {
      const owned = run.beforeEffect?.();
      if (owned) await owned;
    }
    const recorded = run.recordedStep(id);
    if (recorded) return recorded.value as T;
    if (this.isInFlight(id)) throw new StepError(id, 'is already running in this run; give concurrent steps distinct ids');
    const { abort } = this;
    if (typeof abort === 'function') abort().throwIfAborted();
    else if (abort.aborted) abort.signal.throwIfAborted();
    this.enter(id);
    try {
      const info: StepInfo = { id, key: stepKey(run.idempotencyKey, id) };
      let value: T;
      let ok: boolean;
      if (fn) {
        value = await fn(info);
        assertJson(id, value);
        ok = await run.recordStep(id, value);
      } else {
        const tx = new RedisTx();
        const returned = (txFn as NonNullable<typeof txFn>)(tx, info);
        // Most Redis step functions return a plain value: awaiting one would cost a promise and a turn.
        value = isThenable(returned) ? await returned : returned;
        assertJson(id, value);
        ok = await run.recordTxStep(id, value, tx.commands);
      }
      if (!ok) throw new LeaseLostError(run.idempotencyKey, `while recording step "${id}"`);
      if (this.onRecorded) await this.onRecorded();
      // Return what a resumed run would see, so first runs and retries behave the same.
      return run.recordedStep(id)?.value as T;
    } finally {
      this.leave(id);
    }
  }

  private isInFlight(id: string): boolean {
    return this.inFlight === id || this.moreInFlight?.has(id) === true;
  }

  private enter(id: string): void {
    if (this.inFlight === undefined) this.inFlight = id;
    else (this.moreInFlight ??= new Set()).add(id);
  }

  private leave(id: string): void {
    if (this.inFlight === id) this.inFlight = undefined;
    else this.moreInFlight?.delete(id);
  }
}

function isThenable<T>(value: T | PromiseLike<T>): value is PromiseLike<T> {
  return typeof (value as Partial<PromiseLike<T>> | null)?.then === 'function';
}

function assertJson(id: string, value: unknown): void {
  if (value !== undefined && value !== null && JSON.stringify(value) === undefined) {
    throw new StepError(id, 'returned a value that is not JSON-serialisable; return plain data');
  }
}
