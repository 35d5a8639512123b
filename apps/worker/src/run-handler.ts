import type { AnyJob, JobContext } from '@tickwork/runtime';
import { JobTimeoutError, WorkerShutdownError } from './errors.js';
import { asError } from './thrown-value.js';

export const DEFAULT_TIMEOUT_MS = 5 * 60_000;

/**
 * Runs the handler under its timeout. The handler's signal is aborted on timeout or worker shutdown;
 * a handler that ignores its signal and hangs still loses the race, so the attempt fails on time and a
 * drain deadline is really a deadline (WorkerShutdownError).
 */
export async function runHandler<T>(
  job: AnyJob,
  makeContext: (signal: AbortSignal) => JobContext<T>,
  workerSignal: AbortSignal | undefined,
): Promise<unknown> {
  const timeoutMs = job.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  const controller = new AbortController();
  let timer: NodeJS.Timeout | undefined;
  let onWorkerAbort = () => {};
  const timeout = new Promise<never>((_, reject) => {
    onWorkerAbort = () => {
      controller.abort(workerSignal?.reason);
      reject(new WorkerShutdownError(job.name));
    };
    if (workerSignal?.aborted) onWorkerAbort();
    workerSignal?.addEventListener('abort', onWorkerAbort, { once: true });
    timer = setTimeout(() => {
      const err = new JobTimeoutError(job.name, timeoutMs);
      controller.abort(err);
      reject(err);
    }, timeoutMs);
  });
  try {
    return await Promise.race([job.handler(makeContext(controller.signal)), timeout]);
  } catch (err) {
    throw asError(err);
  } finally {
    clearTimeout(timer);
    workerSignal?.removeEventListener('abort', onWorkerAbort);
  }
}
