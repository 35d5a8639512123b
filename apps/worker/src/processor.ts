import {
  idempotencyKeyOf,
  jobDuration,
  jobsCompleted,
  jobsFailed,
  nominalTimeOf,
  PayloadValidationError,
  redriveMetaOf,
  validatePayload,
  type Catalog,
  type Delivery,
  type Enqueue,
  type JobContext,
  type Logger,
} from '@tickwork/runtime';
import { UnrecoverableError, type Job } from 'bullmq';
import type { Redis } from 'ioredis';
import { runHandler } from './run-handler.js';

export interface ProcessorDeps {
  catalog: Catalog;
  redis: Redis;
  enqueue: Enqueue;
  log: Logger;
}

export function deliveryOf(job: Job): Delivery {
  return {
    id: String(job.id),
    name: job.name,
    data: job.data,
    repeatJobKey: job.repeatJobKey,
    prevMillis: job.opts.prevMillis,
    redrive: redriveMetaOf(job.opts),
  };
}

/**
 * The BullMQ processor: finds the handler by job name, validates the payload, builds the context and
 * runs the handler. Unknown names and invalid payloads can never succeed, so they fail without retries
 * (UnrecoverableError) instead of burning attempts.
 */
export function createProcessor(deps: ProcessorDeps) {
  return async (job: Job, _token?: string, signal?: AbortSignal): Promise<unknown> => {
    const def = deps.catalog.get(job.name);
    const attempt = job.attemptsMade + 1;
    const log = deps.log.child({ queue: job.queueName, job: job.name, jobId: job.id, attempt });
    if (!def) {
      log.error({ known: deps.catalog.jobs.map((j) => j.name) }, 'unknown job: no handler in the catalog of this worker');
      throw new UnrecoverableError('unknown job');
    }
    let data: unknown;
    try {
      data = validatePayload(def, job.data);
    } catch (err) {
      if (err instanceof PayloadValidationError) {
        log.error({ issues: err.issues }, 'invalid payload');
        throw new UnrecoverableError(`invalid payload: ${err.issues.map((i) => `${i.path || '(root)'}: ${i.message}`).join('; ')}`);
      }
      throw err;
    }
    const delivery = deliveryOf(job);
    const nominalTime = nominalTimeOf(delivery);
    const idempotencyKey = idempotencyKeyOf(def, delivery, data);
    const makeContext = (runSignal: AbortSignal): JobContext<unknown> => ({
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
      isCatchUp: false,
      step: (_id, fn) => fn(),
      enqueue: deps.enqueue,
      redis: deps.redis,
    });
    log.debug({ idempotencyKey }, 'job started');
    const labels = { queue: job.queueName, job: job.name };
    const stopTimer = jobDuration.startTimer(labels);
    try {
      const result = await runHandler(def, makeContext, signal);
      jobsCompleted.inc(labels);
      log.info('job completed');
      return result;
    } catch (err) {
      jobsFailed.inc(labels);
      throw err;
    } finally {
      stopTimer();
    }
  };
}
