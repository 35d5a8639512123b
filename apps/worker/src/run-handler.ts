import type { AnyJob, JobContext } from '@tickwork/runtime';
import { JobCancelledError, JobTimeoutError, WorkerShutdownError } from './errors.js';
import { asError } from './thrown-value.js';

export const DEFAULT_TIMEOUT_MS = 5 * 60_000;

/**
 * Runs the handler under its timeout. The handler's signal is aborted on timeout or worker shutdown;
 * a handler that ignores its signal and hangs still loses the race, so the attempt fails on time and a
 * drain deadline is really a deadline (WorkerShutdownError). An operator's cancel aborts the same signal
 * with a JobCancelledError as its reason, and the attempt ends with that error.
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
      const reason: unknown = workerSignal?.reason;
      const cancelled = JobCancelledError.fromAbortReason(reason);
      controller.abort(cancelled ?? reason);
      reject(cancelled ?? new WorkerShutdownError(job.name));
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
    // A handler honouring its signal may reject first with an error of its own (an AbortError): the
    // attempt still ends as cancelled.
    const cancelled = workerSignal?.aborted ? JobCancelledError.fromAbortReason(workerSignal.reason) : undefined;
    if (cancelled) throw cancelled;
    throw asError(err);
  } finally {
    clearTimeout(timer);
    workerSignal?.removeEventListener('abort', onWorkerAbort);
  }
}
