import type { AnyJob, JobContext } from '@tickwork/runtime';
import { JobTimeoutError } from './errors.js';
import { asError } from './thrown-value.js';

export const DEFAULT_TIMEOUT_MS = 5 * 60_000;

/**
 * Runs the handler under its timeout. The handler's signal is aborted on timeout or worker shutdown;
 * a handler that ignores its signal and hangs still loses the race, so the attempt fails on time.
 */
export async function runHandler<T>(
  job: AnyJob,
  makeContext: (signal: AbortSignal) => JobContext<T>,
  workerSignal: AbortSignal | undefined,
): Promise<unknown> {
  const timeoutMs = job.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  const controller = new AbortController();
  const onWorkerAbort = () => controller.abort(workerSignal?.reason);
  workerSignal?.addEventListener('abort', onWorkerAbort, { once: true });
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
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
