import { AckOptions, SharedAckOptions, withoutNulls } from '../ack/ack-options.js';
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
 * (AckOptions: the token, and the rest shared by every job of its kind) for the acknowledgements' fold,
 * which sends them as JSON or packs them itself (ack/ack-options.ts). Only for a connection
 * whose acknowledgements go through the fold (acksFolded). completion-args.test.ts holds it to BullMQ's own,
 * field by field, for the options a job and a worker can set, so a BullMQ release that changes them fails
 * there.
 */
export function completionArgs(backend: CompletionBackend, worker: CompletionWorker, job: Job, returnvalue: string | undefined, token: string, fetchNext: boolean): unknown[] {
  const k = backend.moveToFinishedKeys;
  const options = new AckOptions(token, sharedOptions(backend, worker, job));
  // One array literal: BullMQ's way (its KEYS array, then concat) cost about twice as much per job.
  return [
    k[0], k[1], k[2], k[3], k[4], k[5], k[6], k[7], k[8], k[9],
    worker.keys.completed, worker.toKey(job.id ?? ''), worker.toKey('metrics:completed'), worker.keys.marker,
    job.id, Date.now(), 'returnvalue', returnvalue ?? 'null', 'completed', !fetchNext || worker.closing ? 0 : 1, worker.keys[''], options, undefined,
  ];
}

/** Per worker, the options its acknowledgements share, by the job options they depend on (kindOf). */
const kinds = new WeakMap<CompletionWorker, Map<string, SharedAckOptions>>();
/** A worker sees few kinds of job options; past this many it starts again rather than growing. */
const MAX_KINDS = 64;

/**
 * The options of `job`'s acknowledgement but its token: made once per kind of job options and worker (a
 * worker's options do not change once it runs), as BullMQ makes them per job.
 */
function sharedOptions(backend: CompletionBackend, worker: CompletionWorker, job: Job): SharedAckOptions {
  let known = kinds.get(worker);
  if (!known) kinds.set(worker, (known = new Map()));
  const kind = kindOf(job.opts);
  const found = known.get(kind);
  if (found) return found;
  const opts = worker.opts;
  const value: Record<string, unknown> = {
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
  if (known.size >= MAX_KINDS) known.clear();
  const shared = new SharedAckOptions(value);
  known.set(kind, shared);
  return shared;
}

/** What of a job's options its acknowledgement's options depend on, as text. */
function kindOf(o: Job['opts']): string {
  const keep = o.removeOnComplete;
  const attempts = o.attempts;
  return (
    `${typeof keep === 'object' && keep !== null ? JSON.stringify(keep) : String(keep)}|${typeof attempts === 'number' || attempts == null ? String(attempts) : JSON.stringify(attempts)}|` +
    `${o.failParentOnFailure ? 1 : 0}${o.continueParentOnFailure ? 1 : 0}${o.ignoreDependencyOnFailure ? 1 : 0}${o.removeDependencyOnFailure ? 1 : 0}`
  );
}
