import { TickworkError } from '../errors.js';

/**
 * This run no longer holds its idempotency lease (it expired while the process was paused or cut off
 * from Redis, and another delivery took the run over). The handler is aborted and its result is not
 * recorded: the new holder's run is the one that counts.
 */
export class LeaseLostError extends TickworkError {
  override name = 'LeaseLostError';
  constructor(readonly idempotencyKey: string, detail: string) {
    super(
      `lost the idempotency lease of run "${idempotencyKey}" (${detail}); another delivery owns the run now. ` +
        'If this repeats, look for event-loop stalls in the handler, or raise WORKER_DEAD_AFTER_MS (a process silent that long counts as dead)',
    );
  }
}

/** A step id or a step result that cannot be recorded. */
export class StepError extends TickworkError {
  override name = 'StepError';
  constructor(readonly stepId: string, detail: string) {
    super(`ctx.step(${JSON.stringify(stepId)}): ${detail}`);
  }
}
