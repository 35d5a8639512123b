import { TickworkError } from '@tickwork/runtime';

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
