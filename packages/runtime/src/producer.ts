import type { AnyJob, Enqueue, EnqueueOptions, JobInput } from './define-job.js';
import type { Catalog } from './catalog.js';
import { assertPayloadSize, DEFAULT_MAX_PAYLOAD_BYTES, validatePayload } from './payload.js';
import { jobOptions, type QueueSet } from './queues.js';

export interface ProducerOptions {
  maxPayloadBytes?: number;
}

/**
 * The typed way to add work: validates against the job's schema and size limit first, so a bad
 * payload is refused at the producer with nothing enqueued.
 */
export function createEnqueue(catalog: Catalog, queues: QueueSet, opts: ProducerOptions = {}): Enqueue {
  const limit = opts.maxPayloadBytes ?? DEFAULT_MAX_PAYLOAD_BYTES;
  return async <J extends AnyJob>(job: J, data: JobInput<J>, enqueueOpts: EnqueueOptions = {}) => {
    const known = catalog.require(job.name);
    const payload = validatePayload(known, data);
    assertPayloadSize(known.name, payload, limit);
    const added = await queues.get(known.queue).add(known.name, payload, {
      ...jobOptions(known),
      ...(enqueueOpts.jobId !== undefined && { jobId: enqueueOpts.jobId }),
      ...(enqueueOpts.delayMs !== undefined && { delay: enqueueOpts.delayMs }),
      ...(enqueueOpts.priority !== undefined && { priority: enqueueOpts.priority }),
    });
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
