import { AckOptions, withoutNulls } from '@tickwork/runtime';
import type { Job, WorkerOptions } from 'bullmq';

/** What BullMQ's moveToCompletedArgs reads of its Redis backend (redis-queue-backend.js; public there). */
export interface CompletionBackend {
  moveToFinishedKeys: unknown[];
  getKeepJobs(shouldRemove: unknown, workerKeepJobs: unknown): unknown;
}

/** What it reads of the Worker (its QueueBase; public there). */
export interface CompletionWorker {
  keys: Record<string, string>;
  toKey(type: string): string;
  opts: WorkerOptions;
  closing: Promise<void> | undefined;
}

/**
 * BullMQ's moveToCompletedArgs (redis-queue-backend.js, moveToFinishedArgs with target 'completed'): the
 * same KEYS and ARGV, in the same order, made the same way, but its options (ARGV[8]) left unpacked
 * (AckOptions) for the acknowledgements' fold, which sends them as JSON or packs them itself
 * (@tickwork/runtime ack-options.ts). Only for a connection whose acknowledgements go through the fold
 * (acksFolded). completion-args.test.ts holds it to BullMQ's own, field by field, for the options a job
 * and a worker can set, so a BullMQ release that changes them fails there.
 */
export function completionArgs(backend: CompletionBackend, worker: CompletionWorker, job: Job, returnvalue: string | undefined, token: string, fetchNext: boolean): unknown[] {
  const keys = backend.moveToFinishedKeys;
  keys[10] = worker.keys.completed;
  keys[11] = worker.toKey(job.id ?? '');
  keys[12] = worker.toKey('metrics:completed');
  keys[13] = worker.keys.marker;
  const opts = worker.opts;
  const value: Record<string, unknown> = {
    token,
    keepJobs: withoutNulls(backend.getKeepJobs(job.opts.removeOnComplete, opts.removeOnComplete)),
    lockDuration: opts.lockDuration,
    maxMetricsSize: opts.metrics?.maxDataPoints ? opts.metrics.maxDataPoints : '',
    fpof: !!job.opts.failParentOnFailure,
    cpof: !!job.opts.continueParentOnFailure,
    idof: !!job.opts.ignoreDependencyOnFailure,
    rdof: !!job.opts.removeDependencyOnFailure,
  };
  if (opts.name != null) value.name = opts.name;
  if (opts.limiter != null) value.limiter = withoutNulls(opts.limiter);
  if (job.opts.attempts != null) value.attempts = job.opts.attempts;
  const args = [job.id, Date.now(), 'returnvalue', returnvalue ?? 'null', 'completed', !fetchNext || worker.closing ? 0 : 1, worker.keys[''], new AckOptions(value), undefined];
  return keys.concat(args);
}
