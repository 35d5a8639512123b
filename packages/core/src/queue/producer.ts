import type { JobsOptions } from 'bullmq';
import type { AnyJob, Enqueue, EnqueueOptions, JobInput } from '../job/define-job.js';
import type { Catalog } from '../job/catalog.js';
import { assertPayloadSize, DEFAULT_MAX_PAYLOAD_BYTES, validatePayload } from '../job/payload.js';
import { jobOptions, type QueueSet } from './queues.js';

export interface ProducerOptions {
  maxPayloadBytes?: number;
}

/**
 * The rule every way of enqueueing shares (`enqueue`, the PostgreSQL outbox and its relay): the job must be
 * in the catalog and its payload must pass the job's schema and size limit. Returns the parsed payload.
 */
export function checkedPayload(
  catalog: Catalog,
  jobName: string,
  data: unknown,
  limitBytes = DEFAULT_MAX_PAYLOAD_BYTES,
): { job: AnyJob; payload: unknown } {
  const job = catalog.require(jobName);
  const payload = validatePayload(job, data);
  assertPayloadSize(job.name, payload, limitBytes);
  return { job, payload };
}

/** BullMQ's options for adding a catalog job: its defaults plus what the producer asked for. */
export function addOptions(job: AnyJob, enqueueOpts: EnqueueOptions): JobsOptions {
  return {
    ...jobOptions(job),
    ...(enqueueOpts.jobId !== undefined && { jobId: enqueueOpts.jobId }),
    ...(enqueueOpts.delayMs !== undefined && { delay: enqueueOpts.delayMs }),
    ...(enqueueOpts.priority !== undefined && { priority: enqueueOpts.priority }),
  };
}

/**
 * The typed way to add work: validates against the job's schema and size limit first, so a bad
 * payload is refused at the producer with nothing enqueued.
 */
export function createEnqueue(catalog: Catalog, queues: QueueSet, opts: ProducerOptions = {}): Enqueue {
  const limit = opts.maxPayloadBytes ?? DEFAULT_MAX_PAYLOAD_BYTES;
  return async <J extends AnyJob>(job: J, data: JobInput<J>, enqueueOpts: EnqueueOptions = {}) => {
    const checked = checkedPayload(catalog, job.name, data, limit);
    const added = await queues.get(checked.job.queue).add(checked.job.name, checked.payload, addOptions(checked.job, enqueueOpts));
    return { id: String(added.id) };
  };
}

/** Enqueue by name with untyped data, for the CLI and the dashboard. */
export async function enqueueByName(
  catalog: Catalog,
  enqueue: Enqueue,
  name: string,
  data: unknown,
  opts?: EnqueueOptions,
): Promise<{ id: string }> {
  const job = catalog.require(name);
  return enqueue(job, data as JobInput<typeof job>, opts);
}
