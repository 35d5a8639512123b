import { jobOptions, occurrenceBatchOf, SCHEDULED_RUN_OPTION, type AnyJob, type BatchedOccurrence, type OccurrenceBatch, type ScheduledRun } from '@tickwork/core';
import { RunClaimRefusedError } from '@tickwork/exactly-once';
import { Backoffs, DelayedError, UnrecoverableError, type Job, type JobsOptions } from 'bullmq';
import { JobCancelledError } from '../errors.js';
import type { RunningRun } from '../running-jobs.js';
import type { ProcessorDeps } from './deps.js';
import { JobRun } from './job-run.js';
import { identify, validate } from './stages/admit.js';

/**
 * A batch of occurrences (@tickwork/core occurrence-batch.ts; docs/schedules.md, "Batch delivery"): one
 * BullMQ job carrying the on-time occurrences of one job due at one instant. Each occurrence runs as its own
 * run, one after another, through the same stages as an occurrence delivered alone (its ledger record under
 * its own key, its history, its overlap slot, its handler), under the job id it would have had alone. What
 * a BullMQ job gives a run alone, the batch gives by handing the occurrence on as a job of its own
 * (`handOn`) under that id, so a retry, a deferral, a final failure and its dead letter are an ordinary
 * job's:
 *
 * - a failed attempt that will be retried: handed on, delayed by the job's backoff, its attempts counted on;
 * - a failure for good (attempts spent, an UnrecoverableError, an operator's cancel): handed on marked with
 *   its reason, which that job fails with at once (admit.ts), reaching the failed set and the DLQ;
 * - a deferral (the run held by another delivery; shutdown; a Redis restart): handed on, delayed as asked;
 * - the batch delivered again (a crash, a stall, a retry of the batch): every occurrence handed on at once,
 *   and the ledger answers those that ran from their records, as for any duplicate delivery;
 * - the worker draining: the occurrences not started are handed on.
 *
 * The batch's job completes once every occurrence has run or been handed on.
 */
export async function runOccurrenceBatch(deps: ProcessorDeps, job: Job, token: string | undefined, runStages: (run: JobRun) => Promise<unknown>): Promise<unknown> {
  let batch: OccurrenceBatch;
  try {
    batch = occurrenceBatchOf(job.data);
  } catch (err) {
    deps.log.error({ queue: job.queueName, jobId: job.id, err: { message: (err as Error).message } }, 'an occurrence batch that cannot be read: failed without running any of it');
    throw new UnrecoverableError((err as Error).message);
  }
  const def = deps.catalog.get(batch.job);
  // Delivered before (a crash, a stall, a retry), or for a job this worker does not know: every occurrence a job of its own.
  if (!def || job.attemptsMade > 0 || job.attemptsStarted > 1 || job.stalledCounter > 0) {
    await handOn(deps, job, def && jobOptions(def), batch.job, batch.runs.map((o) => ({ o, attempts: 0, delayMs: 0 })));
    return { ran: 0, handedOn: batch.runs.length };
  }
  const carrier = new BatchCarrier(job, def);
  // A cancel asked for the batch before it started (its id is the one an operator sees in Bull Board).
  const cancels = deps.cancels;
  if (cancels && !cancels.loaded) await cancels.ready;
  const request = cancels?.pending(job.queueName, carrier.jobId);
  if (request) carrier.abort(JobCancelledError.of(request).message);
  const running = deps.running;
  running?.add(carrier);
  const runs = batch.runs;
  let ran = 0;
  let next = 0;
  let failure: { err: unknown } | undefined;
  const inFlight = new Set<Promise<void>>();
  const launch = (o: BatchedOccurrence): void => {
    const p: Promise<void> = runOne(deps, job, token, def, o, carrier, runStages)
      .then((leaving) => (leaving ? handOn(deps, job, carrier.opts, batch.job, [leaving]) : void ran++))
      .catch((err: unknown) => void (failure ??= { err }))
      .finally(() => inFlight.delete(p));
    inFlight.add(p);
  };
  /**
   * Another occurrence may start while the queue's runs in this process (jobs, and occurrences of batches)
   * are fewer than the worker's concurrency: a herd's batches, as many as the concurrency, run one occurrence
   * each; a lone batch runs as many at once as a worker would run jobs of its own.
   */
  const free = (): boolean => running !== undefined && running.runsOf(job.queueName) < (deps.concurrency ?? 1);
  try {
    while (next < runs.length && !failure) {
      // Stopped (shutdown, a Redis restart) or the worker draining: the rest go on as jobs of their own.
      if ((carrier.stopped && !carrier.cancelled) || running?.draining) break;
      if (inFlight.size === 0 || free()) launch(runs[next++] as BatchedOccurrence);
      else await Promise.race(inFlight);
    }
    await Promise.all(inFlight);
    if (failure) throw failure.err;
    if (next < runs.length) await handOn(deps, job, carrier.opts, batch.job, runs.slice(next).map((o) => ({ o, attempts: 0, delayMs: 0 })));
  } finally {
    running?.delete(carrier);
  }
  if (carrier.cancelled) await cancels?.finished(job.queueName, carrier.jobId);
  return { ran, handedOn: runs.length - ran };
}

/** An occurrence leaving its batch: its attempts so far, and how long its job waits (its reason when it failed for good). */
interface Leaving {
  o: BatchedOccurrence;
  attempts: number;
  delayMs: number;
  failed?: string;
}

/** Runs one occurrence through the stages; what leaves the batch, if it does. */
async function runOne(
  deps: ProcessorDeps,
  batchJob: Job,
  token: string | undefined,
  def: AnyJob,
  o: BatchedOccurrence,
  carrier: BatchCarrier,
  runStages: (run: JobRun) => Promise<unknown>,
): Promise<Leaving | undefined> {
  const job = carriedJob(batchJob, def, o, carrier.opts);
  const run = new JobRun(deps, job, token, true);
  carrier.current.add(run);
  // Read as the batch was (its occurrences' markers validated there): no second parse per occurrence.
  run.delivery = { id: o.id, name: def.name, data: job.data, scheduled: o.run, batch: String(batchJob.id) };
  // An operator cancelled the batch: its occurrences not yet started end cancelled, each recorded so.
  if (carrier.cancelled) run.cancelledAs = JobCancelledError.fromAbortReason(carrier.reason);
  try {
    validate(run);
    identify(run);
    await runStages(run);
    return job.leaving;
  } catch (err) {
    if (job.leaving) return job.leaving;
    if (err instanceof DelayedError || err instanceof RunClaimRefusedError) return undefined;
    const attempt = run.attempt;
    // A cancel ends as an UnrecoverableError (cancel-gate.ts); a JobCancelledError is final all the same.
    if (err instanceof JobCancelledError || run.failsForGood(err)) return { o, attempts: attempt, delayMs: 0, failed: (err as Error)?.message ?? String(err) };
    const backoff = job.opts.backoff === undefined ? undefined : Backoffs.normalize(job.opts.backoff);
    const delayMs = backoff ? Number((await Backoffs.calculate(backoff, attempt, err as Error, batchJob)) ?? 0) : 0;
    run.log.info({ retryInMs: delayMs }, 'occurrence from a batch failed; retried as a job of its own');
    return { o, attempts: attempt, delayMs: Math.max(0, delayMs) };
  } finally {
    carrier.current.delete(run);
  }
}

/**
 * The job an occurrence runs under in its batch: the fields the stages read, as a job of its own would have
 * them (its id, name, payload and options, its first attempt), the batch's times, and a `moveToDelayed`
 * that hands it on instead (a deferral). Not a BullMQ Job: building one costs a Scripts object per
 * occurrence, and the stages read only these fields (pipeline/, context.ts).
 */
interface CarriedJob {
  id: string;
  name: string;
  queueName: string;
  data: unknown;
  opts: JobsOptions;
  attemptsMade: number;
  attemptsStarted: number;
  stalledCounter: number;
  processedOn: number | undefined;
  timestamp: number;
  delay: number;
  leaving: Leaving | undefined;
  moveToDelayed(at: number): Promise<void>;
  updateProgress(value: unknown): Promise<void>;
}

function carriedJob(batchJob: Job, def: AnyJob, o: BatchedOccurrence, opts: JobsOptions): Job & CarriedJob {
  const job: CarriedJob = {
    id: o.id,
    name: def.name,
    queueName: batchJob.queueName,
    data: o.data ?? {},
    // The job's options, shared by the batch's occurrences: the stages read its attempts and backoff from them.
    opts,
    attemptsMade: 0,
    attemptsStarted: 1,
    stalledCounter: 0,
    processedOn: batchJob.processedOn,
    timestamp: batchJob.timestamp,
    delay: batchJob.delay,
    leaving: undefined,
    // A deferral (JobRun.defer, handBack): the occurrence leaves the batch, its job delayed until `at`; no attempt spent.
    moveToDelayed(at) {
      job.leaving = { o, attempts: 0, delayMs: Math.max(0, at - Date.now()) };
      return Promise.resolve();
    },
    // Progress goes on the batch's job, the one an operator finds in Bull Board.
    updateProgress: (value) => batchJob.updateProgress(value as number | object),
  };
  // The stages read a Job's fields only (above); a BullMQ Job has many more, none of which they touch.
  return job as unknown as Job & CarriedJob;
}

/** Adds occurrences leaving their batch as jobs of their own, under their own ids (an id already added adds nothing). */
/** `base`: the job's options (jobOptions), or undefined for a job this worker does not know. */
async function handOn(deps: ProcessorDeps, batchJob: Job, base: JobsOptions | undefined, name: string, leaving: readonly Leaving[]): Promise<void> {
  if (leaving.length === 0) return;
  const queues = deps.queueSet;
  if (!queues) throw new Error('this worker cannot hand occurrences on from a batch: its processor has no queues');
  const attempts = base?.attempts ?? 1;
  await queues.get(batchJob.queueName).addBulk(
    leaving.map(({ o, attempts: made, delayMs, failed }) => {
      const run: ScheduledRun = { ...o.run, a: made, ...(failed !== undefined && { f: failed }) };
      const opts = { ...base, attempts: Math.max(1, attempts - made), jobId: o.id, delay: delayMs, [SCHEDULED_RUN_OPTION]: run } as JobsOptions;
      return { name, data: o.data ?? {}, opts };
    }),
  );
}

/** The batch among the running jobs: a cancel of its id, a shutdown or a Redis restart reach the occurrence running now. */
class BatchCarrier implements RunningRun {
  readonly jobId: string;
  readonly job: { readonly queueName: string };
  /** Its occurrences running now. */
  readonly current = new Set<JobRun>();
  readonly carrier = true;
  /** The options of the batch's job (its attempts, its backoff), read by each occurrence's stages. */
  readonly opts: JobsOptions;
  stopped = false;
  cancelled = false;
  reason: unknown;

  constructor(batchJob: Job, def: AnyJob) {
    this.opts = jobOptions(def);
    this.jobId = String(batchJob.id);
    this.job = { queueName: batchJob.queueName };
  }

  abort(reason: unknown): void {
    if (this.stopped) return;
    this.stopped = true;
    this.reason = reason;
    this.cancelled = JobCancelledError.fromAbortReason(reason) !== undefined;
    for (const run of [...this.current]) run.abort(reason);
  }
}
