import { acksFolded } from '../ack/ack-fold.js';
import { JOB_RECORD_FIELD } from '@tickwork/exactly-once';
import type { RedisClient } from '@tickwork/core';
import { raw2NextJobData, UnrecoverableError, Worker, type Job, type JobJson } from 'bullmq';
import { completionArgs, type CompletionBackend } from './completion-args.js';
import { DeliveredJob } from './delivered-job.js';
import { reportMismatch } from '../guard.js';
import { isJobDecodeError } from '../unreadable.js';

/** BullMQ's backend's execCommand: a script by name, on a connection (ioredis-client.js's runCommand). */
type ExecCommand = (client: unknown, name: string, args: unknown[]) => Promise<unknown>;

/** What a job's completion takes from BullMQ's Redis backend (all public on its RedisQueueBackend). */
interface CompletingBackend extends CompletionBackend {
  closing: Promise<void> | undefined;
  /** The connection its scripts go on (the Worker's own, where acknowledgements fold: runtime ack-fold.ts). */
  client: Promise<unknown>;
  moveToFinishedKeys: unknown[];
  moveToCompletedArgs(job: Job, returnvalue: unknown, removeOnComplete: Job['opts']['removeOnComplete'], token: string, fetchNext: boolean): unknown[];
  finishedErrors(failure: { code: number; jobId?: string; command: string; state?: string }): Error;
}

/** Worker members TypeScript calls private that the short completion path sets or calls as BullMQ's own does. */
interface WorkerInternals {
  drained: boolean;
  updateDelays(rateLimitDelay?: number, delayUntil?: number): void;
}

/** What BullMQ's processJob calls that TypeScript calls private (worker.js; the short path's processJob calls them as it does). */
interface ProcessInternals {
  processorAcceptsSignal: boolean;
  getUnrecoverableErrorMessage(job: Job): string | undefined;
  retryIfFailed<T>(fn: () => Promise<T>, opts: { delayInMs?: number; onlyEmitError?: boolean }): Promise<T>;
}

/**
 * The worker app's BullMQ Worker (worker-pool.ts). It does three things a plain Worker does not:
 *
 * - **Notes sole deliveries.** It notes which jobs' hashes held no run record when delivered, for the
 *   sole-delivery check (recovery/sole-delivery.ts). BullMQ keeps only the fields it knows of the hash it
 *   reads when it delivers a job (rawToJobJson), so the hash is looked at in the reply of the two scripts
 *   that deliver one: moveToActive, and moveToFinished fetching the next job. Both go through the backend's
 *   execCommand; a BullMQ without it notes nothing, and then no delivery is judged sole.
 * - **Completes a job on a short path.** BullMQ's own way from a processor's result to its acknowledgement
 *   passes through eight async functions (handleCompleted, Job.moveToCompleted, its telemetry wrapper and
 *   that wrapper's callback, two waitUntilReady, the backend's moveToCompleted and moveToFinished), and
 *   through two more (retryIfFailed and its callback) for each next job it fetches: each a promise and a
 *   turn of the microtask queue per job, a fifth of a no-op job's promises. Without telemetry (whose spans
 *   the wrappers exist for) this worker does what those functions do, in the same order with
 *   the same arguments: the acknowledgement's arguments from the backend's moveToCompletedArgs (or, where
 *   acknowledgements go through the fold, from completionArgs: the same, its options left unpacked for the
 *   fold to send as JSON; completion-args.ts), the script
 *   called through the backend's execCommand on its connection, a refusal (a negative reply) thrown as the
 *   backend's finishedErrors makes it, the next job's reply decoded by BullMQ's raw2NextJobData, the job's
 *   fields set and the `completed` and `active` events emitted as BullMQ does, all in the reply's one
 *   callback. A next job with a `repeatJobKey` (a BullMQ job scheduler's) and everything else (failures,
 *   telemetry) go BullMQ's own way. If BullMQ lacks what the short path calls (a version whose internals
 *   moved), every completion goes BullMQ's own way. tickwork-worker.test.ts holds the two ways to the same
 *   events, fields and Redis state.
 * - **Runs a job without BullMQ's telemetry wrapper.** Where completions take the short path, processJob is
 *   BullMQ's own step by step without its `trace` (see processJob). Measured with the bench's no-op job, the
 *   two together: 16 promises per job at concurrency 50 against 25 before, Node CPU per job down 15% and
 *   jobs/s up 9% (medians of 20 interleaved rounds in one process).
 */
export class TickworkWorker<D = unknown, R = unknown, N extends string = string> extends Worker<D, R, N> {
  /** Ids of jobs just delivered whose hash held no run record, until their Job is made (createJob). */
  private readonly unrecordedIds = new Set<string>();
  /** BullMQ's backend, if the short completion path can use it (see the class comment). */
  private readonly completing: CompletingBackend | undefined;
  /** The backend's execCommand as BullMQ made it, and its connection once resolved (finish). */
  private readonly exec: ExecCommand | undefined;
  private connection: unknown;
  /** BullMQ's private members processJob calls, if this BullMQ has them all (else its own processJob runs). */
  private readonly internals: ProcessInternals | undefined;

  constructor(...args: ConstructorParameters<typeof Worker<D, R, N>>) {
    super(...args);
    const backend = this.backend as unknown as { execCommand?: ExecCommand };
    const bullExec = backend.execCommand;
    if (typeof bullExec === 'function') {
      const exec: ExecCommand = (client, name, args) => bullExec.call(backend, client, name, args);
      this.exec = exec;
      backend.execCommand = (client, name, args) => {
        const reply = exec(client, name, args);
        return name === 'moveToActive' || name === 'moveToFinished' ? reply.then((raw) => (this.note(raw), raw)) : reply;
      };
    } else reportMismatch({ name: 'RedisQueueBackend#execCommand', detail: "the Worker's backend has no execCommand" }, 'no delivery is judged sole and completions go BullMQ\'s own way');
    this.completing = this.opts.telemetry || !this.exec ? undefined : completingBackendOf(this.backend, this as unknown as Partial<WorkerInternals>);
    if (!this.opts.telemetry && this.exec && !this.completing)
      reportMismatch({ name: "Worker's completion members", detail: 'the Worker or its backend lacks a member the short completion path calls' }, "completions go BullMQ's own way");
    this.internals = this.completing ? processInternalsOf(this) : undefined;
    if (this.completing && !this.internals) reportMismatch({ name: "Worker's processJob members", detail: 'the Worker lacks a private member processJob calls' }, "jobs run through BullMQ's own processJob");
  }

  /**
   * BullMQ's processJob without its telemetry wrapper (a `trace` whose span, with telemetry off, is none)
   * and with the acknowledgement's first try made inline rather than inside retryIfFailed: six promises
   * of the 25 a no-op job made at concurrency 50. What it does is BullMQ's, step by step: the job tracked
   * for its lock's renewal, an unrecoverable job failed, the processor called, the job untracked, then its
   * completion, or its failure when the processor (or a completion BullMQ refuses) throws. A completion that
   * throws goes to BullMQ's retryIfFailed as that first try's outcome, which handles it as it would have:
   * a connection error waits `runRetryDelay` and tries again, any other is reported and fails the attempt.
   */
  override async processJob(job: Job<D, R, N>, token: string, fetchNextCallback: () => boolean = () => true): Promise<void | Job<D, R, N>> {
    const internals = this.internals;
    if (!internals) return super.processJob(job, token, fetchNextCallback);
    const locks = this.lockManager;
    const id = job.id as string;
    const delayInMs = this.opts.runRetryDelay;
    const abort = locks.trackJob(id, token, job.processedOn as number, internals.processorAcceptsSignal);
    try {
      const unrecoverable = internals.getUnrecoverableErrorMessage(job);
      if (unrecoverable)
        return await internals.retryIfFailed(() => {
          locks.untrackJob(id);
          return this.handleFailed(new UnrecoverableError(unrecoverable), job, token, fetchNextCallback);
        }, { delayInMs });
      // BullMQ makes its own AbortController (node-abort-controller's type, the platform's at run time).
      const result = await this.callProcessJob(job, token, abort ? (abort.signal as AbortSignal) : undefined);
      // The first try inline; the closures and options of a retry are made only when it fails.
      try {
        locks.untrackJob(id);
        return await this.handleCompleted(result, job, token, fetchNextCallback);
      } catch (first) {
        let tried = false;
        const again = (): Promise<Job<D, R, N>> => {
          if (!tried) return (tried = true), Promise.reject(first);
          locks.untrackJob(id);
          return this.handleCompleted(result, job, token, fetchNextCallback);
        };
        return await internals.retryIfFailed(again, { delayInMs });
      }
    } catch (err) {
      return await internals.retryIfFailed(() => {
        locks.untrackJob(id);
        return this.handleFailed(err as Error, job, token, fetchNextCallback);
      }, { delayInMs, onlyEmitError: true });
    } finally {
      locks.untrackJob(id);
    }
  }

  /** A delivery's reply is `[hash as a flat array, job id, ...]`; the ledger keeps a run's record in its job's hash as JOB_RECORD_FIELD. */
  private note(raw: unknown): void {
    if (!Array.isArray(raw) || !Array.isArray(raw[0]) || raw[1] === undefined || raw[1] === null) return;
    const hash = raw[0] as unknown[];
    for (let i = 0; i < hash.length; i += 2) if (hash[i] === JOB_RECORD_FIELD) return;
    this.unrecordedIds.add(String(raw[1]));
  }

  /** Its jobs are DeliveredJobs (BullMQ makes them with `this.Job.fromJSON`). */
  protected override get Job(): typeof Job {
    return DeliveredJob;
  }

  protected override createJob(data: JobJson, jobId: string): Job<D, R, N> {
    const job = super.createJob(data, jobId);
    if (this.unrecordedIds.delete(String(job.id ?? jobId)) && job instanceof DeliveredJob) job.unrecordedAtDelivery = true;
    return job;
  }

  /** BullMQ's handleCompleted without its wrappers (see the class comment); with telemetry (a span), BullMQ's own. */
  protected override handleCompleted(result: R, job: Job<D, R, N>, token: string, fetchNextCallback: () => boolean = () => true, span?: Parameters<Worker['handleCompleted']>[4]): Promise<Job<D, R, N>> {
    const backend = this.completing;
    if (!backend || span) return super.handleCompleted(result, job, token, fetchNextCallback, span);
    // From here on, what BullMQ's handleCompleted, Job.moveToCompleted and the backend's moveToCompleted do.
    if (backend.closing) return Promise.resolve(undefined as unknown as Job<D, R, N>);
    const fetchNext = fetchNextCallback() && !(this.closing || this.paused);
    job.returnvalue = (result || undefined) as R;
    // A result JSON cannot encode throws here, as it throws there (the attempt fails).
    const value = JSON.stringify(result);
    // Through the fold, its options go unpacked (completion-args.ts); else as BullMQ makes them.
    const args =
      this.connection !== undefined && acksFolded(this.connection as RedisClient)
        ? completionArgs(backend, this, job, value, token, fetchNext)
        : backend.moveToCompletedArgs(job, value, job.opts.removeOnComplete, token, fetchNext);
    return this.finish(args).then((raw) => this.completed(backend, job, result, args, raw, token));
  }

  /** The backend's moveToFinished: the script called through its execCommand, on its connection once resolved. */
  private finish(args: unknown[]): Promise<unknown> {
    const exec = this.exec as ExecCommand; // set whenever `completing` is
    if (this.connection === undefined) return (this.completing as CompletingBackend).client.then((c) => exec((this.connection = c), 'moveToFinished', args));
    return exec(this.connection, 'moveToFinished', args);
  }

  /**
   * What follows the acknowledgement's reply, in its one callback: the reply noted (a sole delivery's
   * check), a negative one thrown as BullMQ's error for it, the job's fields set and its `completed` event
   * emitted, then the next job it fetched made and returned as it is, not in a promise of its own (a
   * promise returned from a callback costs the chain two more turns of the microtask queue).
   */
  private completed(backend: CompletingBackend, job: Job<D, R, N>, result: R, args: unknown[], raw: unknown, token: string): Job<D, R, N> | Promise<Job<D, R, N>> {
    this.note(raw);
    if (typeof raw === 'number' && raw < 0) throw backend.finishedErrors({ code: raw, jobId: job.id, command: 'moveToFinished', state: 'active' });
    job.finishedOn = args[backend.moveToFinishedKeys.length + 1] as number;
    job.attemptsMade += 1;
    this.emit('completed', job, result, 'active');
    if (raw === undefined) return undefined as unknown as Job<D, R, N>;
    try {
      const [jobData, jobId, rateLimitDelay, delayUntil] = raw2NextJobData(raw as unknown[]) as [JobJson | undefined, string | undefined, number, number];
      (this as unknown as WorkerInternals).updateDelays(rateLimitDelay, delayUntil);
      return this.nextJob(jobData, jobId, token);
    } catch (err) {
      // The next job's stored data or options do not decode (unreadable.ts): this job is done all the same,
      // so the error is only reported (the worker then fails that job), not thrown into this job's completion.
      if (!isJobDecodeError(err)) throw err;
      this.emit('error', err as Error);
      return undefined as unknown as Job<D, R, N>;
    }
  }

  /** BullMQ's way to a job fetched by moveToActive (or by its own acknowledgements): nextJob's, as a promise. */
  protected override nextJobFromJobData(jobData?: JobJson, jobId?: string, token?: string): Promise<Job<D, R, N>> {
    if (!this.completing) return super.nextJobFromJobData(jobData, jobId, token);
    return Promise.resolve(this.nextJob(jobData, jobId, token));
  }

  /**
   * A job fetched with an acknowledgement (or by moveToActive), made and announced as BullMQ's own does it;
   * BullMQ's own for none (its `drained`) and for a job scheduler's job, whose next job BullMQ adds here.
   */
  private nextJob(jobData: JobJson | undefined, jobId: string | undefined, token: string | undefined): Job<D, R, N> | Promise<Job<D, R, N>> {
    if (!jobData || jobData.repeatJobKey || jobId === undefined) return super.nextJobFromJobData(jobData, jobId, token);
    (this as unknown as WorkerInternals).drained = false;
    const job = this.createJob(jobData, jobId);
    job.token = token;
    this.emit('active', job, 'waiting');
    return job;
  }
}

/** The worker's private members processJob calls, if it has them all. */
function processInternalsOf(worker: unknown): ProcessInternals | undefined {
  const w = worker as Partial<ProcessInternals>;
  const all = typeof w.processorAcceptsSignal === 'boolean' && typeof w.getUnrecoverableErrorMessage === 'function' && typeof w.retryIfFailed === 'function';
  return all ? (w as ProcessInternals) : undefined;
}

/** The backend, if it has every member the short completion path calls besides execCommand (checked by the constructor), and the Worker those it sets. */
function completingBackendOf(backend: unknown, worker: Partial<WorkerInternals>): CompletingBackend | undefined {
  const b = backend as Partial<CompletingBackend>;
  const complete =
    typeof b.moveToCompletedArgs === 'function' &&
    typeof b.getKeepJobs === 'function' &&
    typeof b.finishedErrors === 'function' &&
    b.client instanceof Promise &&
    Array.isArray(b.moveToFinishedKeys) &&
    typeof raw2NextJobData === 'function' &&
    typeof worker.updateDelays === 'function' &&
    typeof worker.drained === 'boolean';
  return complete ? (b as CompletingBackend) : undefined;
}
