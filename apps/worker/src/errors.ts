import { TickworkError } from '@tickwork/runtime';

export class JobTimeoutError extends TickworkError {
  override name = 'JobTimeoutError';
  constructor(jobName: string, timeoutMs: number) {
    super(`job "${jobName}" timed out after ${timeoutMs} ms; raise timeoutMs in its defineJob if this is expected`);
  }
}
