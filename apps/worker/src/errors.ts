import { cancellationReason, isCancellationReason, type CancelRequest } from '@tickwork/operations';
import { TickworkError } from '@tickwork/core';

export class JobTimeoutError extends TickworkError {
  override name = 'JobTimeoutError';
  constructor(jobName: string, timeoutMs: number) {
    super(`job "${jobName}" timed out after ${timeoutMs} ms; raise timeoutMs in its defineJob if this is expected`);
  }
}

/** The worker's drain deadline passed while the job ran; the job is handed back, not failed. */
export class WorkerShutdownError extends TickworkError {
  override name = 'WorkerShutdownError';
  constructor(jobName: string) {
    super(`job "${jobName}" was interrupted by worker shutdown; it is handed back to the queue for another worker`);
  }
}

/**
 * Redis restarted while the job ran (redis-restarts.ts): a Redis that restarts may have lost writes it had
 * acknowledged (AOF with `appendfsync everysec`), step records with their effects. The run is handed back
 * without spending an attempt, so its next delivery resumes from what the ledger really holds.
 */
export class RedisRestartedError extends TickworkError {
  override name = 'RedisRestartedError';
  constructor() {
    super('Redis restarted while the job ran and may have lost acknowledged writes; the job is handed back to run again from its recorded steps');
  }
}

/**
 * An operator cancelled the job (see cancel-listener.ts). Its message is the failed reason, `cancelled by
 * <who>[: <why>]`, which is also the abort reason a running job gets (RunningJobs.cancel).
 */
export class JobCancelledError extends TickworkError {
  override name = 'JobCancelledError';
  constructor(reason: string) {
    super(reason);
  }

  static of(request: CancelRequest): JobCancelledError {
    return new JobCancelledError(cancellationReason(request));
  }

  /** The error for a signal's abort reason, when that reason is a cancellation. */
  static fromAbortReason(reason: unknown): JobCancelledError | undefined {
    if (reason instanceof JobCancelledError) return reason;
    return typeof reason === 'string' && isCancellationReason(reason) ? new JobCancelledError(reason) : undefined;
  }
}
