import type { AnyJob, JobContext } from '@tickwork/runtime';
import { JobCancelledError, JobTimeoutError, WorkerShutdownError } from './errors.js';
import { asError } from './thrown-value.js';

export const DEFAULT_TIMEOUT_MS = 5 * 60_000;

/** What aborts a run from outside: the worker (shutdown, cancel) or a lost lease (ExactlyOnceRun.onAbort). */
export interface RunAborts {
  onAbort(listener: (reason: unknown) => void): () => void;
}

/**
 * Runs the handler under its timeout. The handler's signal is aborted on timeout or worker shutdown;
 * a handler that ignores its signal and hangs still loses the race, so the attempt fails on time and a
 * drain deadline is really a deadline (WorkerShutdownError). An operator's cancel aborts the same signal
 * with a JobCancelledError as its reason, and the attempt ends with that error.
 *
 * The handler's signal is made when the handler first reads it (most short handlers never do): an abort
 * before that is kept and applied then.
 */
export async function runHandler<T>(
  job: AnyJob,
  makeContext: (signalOf: () => AbortSignal) => JobContext<T>,
  aborts: RunAborts,
): Promise<unknown> {
  const timeoutMs = job.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  let controller: AbortController | undefined;
  let aborted: { reason: unknown } | undefined;
  const abort = (reason: unknown) => {
    aborted ??= { reason };
    controller?.abort(reason);
  };
  const signalOf = () => {
    if (!controller) {
      controller = new AbortController();
      if (aborted) controller.abort(aborted.reason);
    }
    return controller.signal;
  };
  let timer: NodeJS.Timeout | undefined;
  let stopListening = () => {};
  /** The reason the run was aborted from outside, if it was. */
  let outside: { reason: unknown } | undefined;
  const timeout = new Promise<never>((_, reject) => {
    stopListening = aborts.onAbort((reason) => {
      outside = { reason };
      const cancelled = JobCancelledError.fromAbortReason(reason);
      abort(cancelled ?? reason);
      reject(cancelled ?? new WorkerShutdownError(job.name));
    });
    timer = setTimeout(() => {
      const err = new JobTimeoutError(job.name, timeoutMs);
      abort(err);
      reject(err);
    }, timeoutMs);
  });
  try {
    return await Promise.race([job.handler(makeContext(signalOf)), timeout]);
  } catch (err) {
    // A handler honouring its signal may reject first with an error of its own (an AbortError): the
    // attempt still ends as cancelled.
    const cancelled = outside ? JobCancelledError.fromAbortReason(outside.reason) : undefined;
    if (cancelled) throw cancelled;
    throw asError(err);
  } finally {
    clearTimeout(timer);
    stopListening();
  }
}
