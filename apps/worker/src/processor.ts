import {
  DEFAULT_OVERLAP_POLICY,
  idempotencyKeyOf,
  isCatchUpOf,
  jobRecordKey,
  runRecordPlaceOf,
  lockFn,
  onStepRecordedFor,
  runExactlyOnce,
  type ExactlyOnce,
  jobDuration,
  jobsCompleted,
  jobsFailed,
  nominalTimeOf,
  PayloadValidationError,
  runRecorder,
  checkedDeliveryOf,
  InvalidJobOptionError,
  validatePayload,
  describeIssues,
  type Catalog,
  type Delivery,
  type Enqueue,
  type ExactlyOnceRun,
  type JobContext,
  type Logger,
} from '@tickwork/runtime';
import { DelayedError, UnrecoverableError, type Job } from 'bullmq';
import type { Redis } from 'ioredis';
import { WorkerShutdownError } from './errors.js';
import { judgeLateOccurrence } from './late-occurrence.js';
import { runHandler } from './run-handler.js';
import { stallResetOnProgress } from './stall-progress.js';

export interface ProcessorDeps {
  catalog: Catalog;
  redis: Redis;
  enqueue: Enqueue;
  log: Logger;
  /** Idempotency ledger, overlap guard and locks. */
  exactlyOnce: ExactlyOnce;
  /**
   * The connection BullMQ acknowledges jobs of `queue` on (the Worker's own): the ledger writes each
   * result there ahead of the acknowledgement (see CompletionWriter). Without it, results are awaited on
   * the ledger's connection.
   */
  ackConnectionOf?: (queue: string) => Promise<Redis> | undefined;
  /** SCHEDULE_GRACE_MS: an occurrence starting later than this after its time is judged by its missed-run policy. */
  graceMs?: number;
}

/** The result a late occurrence dropped by its missed-run policy completes with (also in the ledger). */
export interface MissedRunResult {
  skipped: 'missed';
  reason: string;
}

/**
 * The BullMQ processor: finds the handler by job name, validates the payload, builds the context and
 * runs the handler. Unknown names and invalid payloads can never succeed, so they fail without retries
 * (UnrecoverableError) instead of burning attempts.
 */
export function createProcessor(deps: ProcessorDeps) {
  return async (job: Job, token?: string, signal?: AbortSignal): Promise<unknown> => {
    const def = deps.catalog.get(job.name);
    const attempt = job.attemptsMade + 1;
    const log = deps.log.child({ queue: job.queueName, job: job.name, jobId: job.id, attempt });
    if (!def) {
      log.error({ known: deps.catalog.jobs.map((j) => j.name) }, 'unknown job: no handler in the catalog of this worker');
      throw new UnrecoverableError('unknown job');
    }
    let data: unknown;
    let delivery: Delivery;
    try {
      delivery = checkedDeliveryOf(job);
      data = validatePayload(def, job.data);
    } catch (err) {
      if (err instanceof PayloadValidationError) {
        log.error({ issues: err.issues }, 'invalid payload');
        throw new UnrecoverableError(`invalid payload: ${describeIssues(err.issues)}`);
      }
      if (err instanceof InvalidJobOptionError) {
        log.error({ option: err.option, issues: err.issues }, 'invalid job option');
        throw new UnrecoverableError(err.message);
      }
      throw err;
    }
    const nominalTime = nominalTimeOf(delivery);
    const idempotencyKey = idempotencyKeyOf(def, delivery, data);
    const eo = deps.exactlyOnce;
    const jobKey = jobRecordKey(eo.prefix, job.queueName, String(job.id));
    const place = runRecordPlaceOf(def, delivery, jobKey, eo.ledger.windowMs);
    /** Set when a late occurrence is allowed to run by its missed-run policy. */
    let lateCatchUp = false;
    const onStepRecorded = stallResetOnProgress({ job, jobKey, token, redis: deps.redis, log });
    const makeContext = (runSignal: AbortSignal, run: ExactlyOnceRun): JobContext<unknown> => {
      const ctx: JobContext<unknown> = {
        data,
        log,
        jobId: String(job.id),
        jobName: job.name,
        queue: job.queueName,
        attempt,
        maxAttempts: job.opts.attempts ?? 1,
        signal: runSignal,
        idempotencyKey,
        nominalTime,
        isCatchUp: isCatchUpOf(delivery) || lateCatchUp,
        step: run.step,
        redisStep: run.redisStep,
        lock: lockFn(deps.exactlyOnce.redis, deps.exactlyOnce.prefix, runSignal),
        enqueue: deps.enqueue,
        redis: deps.redis,
        progress: (value) => job.updateProgress(value),
      };
      onStepRecordedFor(ctx, onStepRecorded); // pgStep's progress, recorded outside the ledger
      return ctx;
    };
    log.debug({ idempotencyKey }, 'job started');
    const labels = { queue: job.queueName, job: job.name };
    const history = runRecorder(deps.redis, deps.exactlyOnce.prefix, def, delivery, log);
    // The overlap policy applies to occurrences the tickwork scheduler enqueued (BullMQ job schedulers are
    // legacy: reconcile removes them, and their last jobs share the occurrence's ledger key anyway).
    // Occurrences of the schedule store carry their overlap policy (absent = the default); older ones use
    // the job's. Manual runs (runNow) are not subject to it, as a manual enqueue of a catalog job never was.
    const scheduled = delivery.scheduled;
    const schedule = scheduled?.m === undefined ? scheduled?.schedule : undefined;
    const policy = scheduled?.v !== undefined ? (scheduled.o ?? DEFAULT_OVERLAP_POLICY) : (def.schedule?.overlap ?? DEFAULT_OVERLAP_POLICY);
    const overlap = schedule && policy !== 'allow' ? { schedule, policy, nominalTime } : undefined;
    const defer = async (ms: number): Promise<never> => {
      await job.moveToDelayed(Date.now() + ms, token);
      throw new DelayedError();
    };
    const onSkip = () => history?.skippedOverlap('the previous run of the schedule was still running');
    // Missed-run policy for occurrences that waited for a worker. Judged on the first delivery only: a retry,
    // a redelivery after a crash or a buffered occurrence coming back is late by design, not missed.
    const judgeLate = scheduled && scheduled.m === undefined && !scheduled.catchUp && !delivery.redrive && job.attemptsMade === 0 && job.attemptsStarted <= 1;
    const preempt = judgeLate
      ? async () => {
          const d = await judgeLateOccurrence(deps.redis, deps.exactlyOnce.prefix, def, scheduled, deps.graceMs ?? 60_000);
          if (d.action === 'run') {
            if (!d.catchUp) return undefined;
            lateCatchUp = true;
            log.info({ schedule: scheduled.schedule, nominalTime, lateByMs: d.lateByMs, laterDue: d.laterDue }, 'late occurrence runs as a catch-up');
            await history?.catchingUp();
            return undefined;
          }
          const result: MissedRunResult = { skipped: 'missed', reason: d.reason };
          log.warn({ schedule: scheduled.schedule, nominalTime, lateByMs: d.lateByMs, laterDue: d.laterDue }, `occurrence missed: ${d.reason}`);
          return { result, recorded: () => history?.missed(d.reason) ?? Promise.resolve() };
        }
      : undefined;
    const ackConnection = await deps.ackConnectionOf?.(job.queueName);
    const exactlyOnceOpts = { key: idempotencyKey, place, log, labels, signal, defer, overlap, onSkip, preempt, ackConnection, onStepRecorded };
    return runExactlyOnce(deps.exactlyOnce, exactlyOnceOpts, async (run) => {
      // The start's history write also checks the schedule (same script): a run enqueued before its
      // schedule was removed, changed or paused is not run, and completes with the reason.
      const verdict = (await history?.started(attempt)) ?? 'ok';
      if (verdict !== 'ok') {
        log.info({ schedule: scheduled?.schedule, nominalTime, verdict }, `scheduled run skipped: its schedule was ${verdict}`);
        return { skipped: verdict };
      }
      const stopTimer = jobDuration.startTimer(labels);
      try {
        const result = await runHandler(def, (s) => makeContext(s, run), run.signal);
        jobsCompleted.inc(labels);
        log.info('job completed');
        await history?.succeeded();
        return result;
      } catch (err) {
        if (err instanceof WorkerShutdownError) {
          // Hand the job back at once, without spending an attempt: it did not fail, this worker left.
          log.warn('interrupted by shutdown; handing the job back to the queue');
          return defer(0);
        }
        jobsFailed.inc(labels);
        await history?.failed(err, err instanceof UnrecoverableError || attempt >= (job.opts.attempts ?? 1));
        throw err;
      } finally {
        stopTimer();
      }
    });
  };
}
