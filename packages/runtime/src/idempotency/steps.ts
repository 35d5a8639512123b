import { LeaseLostError, StepError } from './errors.js';
import type { LedgerRun } from './ledger.js';

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
 * `ctx.step(id, fn)`: runs `fn` once per run across retries and redeliveries. A step whose result was
 * recorded returns that result without running `fn` again. Results must be JSON values (they are
 * stored in Redis); a Date comes back as its ISO string.
 *
 * The gap that remains is between `fn`'s effect and the recording of its result: a crash exactly there
 * repeats the step. Close it by passing the step's key (`fn`'s argument, `s.key`) to the external API,
 * as the billing job does.
 */
export function createStep(run: LedgerRun, signalOf: () => AbortSignal): StepFn {
  let inFlight: Set<string> | undefined; // most runs have no steps: no Set for them
  return async <T>(id: string, fn: (step: StepInfo) => Promise<T>): Promise<T> => {
    assertStepId(id);
    const recorded = run.recordedStep(id);
    if (recorded) return recorded.value as T;
    if (inFlight?.has(id)) {
      throw new StepError(id, 'is already running in this run; give concurrent steps distinct ids');
    }
    signalOf().throwIfAborted();
    (inFlight ??= new Set()).add(id);
    try {
      const value = await fn({ id, key: stepKey(run.idempotencyKey, id) });
      if (value !== undefined && JSON.stringify(value) === undefined) {
        throw new StepError(id, 'returned a value that is not JSON-serialisable; return plain data');
      }
      if (!(await run.recordStep(id, value))) {
        throw new LeaseLostError(run.idempotencyKey, `while recording step "${id}"`);
      }
      // Return what a resumed run would see, so first runs and retries behave the same.
      return run.recordedStep(id)?.value as T;
    } finally {
      inFlight?.delete(id);
    }
  };
}
