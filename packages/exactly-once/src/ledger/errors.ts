import { TickworkError } from '@tickwork/core';

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

/**
 * A lazily claimed run (lazy-run.ts) found, at its first effect, that another delivery completed the run
 * (`done`) or holds it (`busy`). Thrown out of that effect (`ctx.step`, `ctx.redisStep`, `ctx.lock`,
 * `ctx.enqueue`) before it happens; the delivery then ends as a suppressed duplicate or is deferred, as if
 * the claim had been made before the handler started. Handlers need not catch it.
 */
export class RunClaimRefusedError extends TickworkError {
  override name = 'RunClaimRefusedError';
  constructor(
    readonly idempotencyKey: string,
    readonly outcome: { kind: 'done'; result: unknown; completedAt: Date | undefined } | { kind: 'busy'; leaseLeftMs: number; holder: string },
  ) {
    super(
      outcome.kind === 'done'
        ? `run "${idempotencyKey}" was completed by another delivery; this one stops before its first effect`
        : `run "${idempotencyKey}" is held by another delivery; this one is deferred before its first effect`,
    );
  }
}
