import {
  describeSchedule,
  jobOptions,
  knownQueues,
  registerQueues,
  repeatOptionsOf,
  type Catalog,
  type Logger,
  type QueueSet,
} from '@tickwork/runtime';
import type { Redis } from 'ioredis';

export interface ReconcileResult {
  upserted: { id: string; queue: string; next: Date | undefined }[];
  removed: { id: string; queue: string }[];
}

/**
 * Makes the job schedulers in Redis equal the catalog: upserts one scheduler per scheduled job (id = job
 * name) and removes schedulers no job claims any more, so a deploy never leaves a ghost schedule firing.
 *
 * Safe with any number of scheduler replicas: BullMQ's upsert is an atomic script keyed by the scheduler
 * id, and an occurrence's job id is `repeat:<id>:<due ms>`, so concurrent upserts converge on one
 * scheduler and one job per occurrence.
 */
export async function reconcileSchedules(opts: {
  catalog: Catalog;
  queues: QueueSet;
  redis: Redis;
  log: Logger;
}): Promise<ReconcileResult> {
  const { catalog, queues, redis, log } = opts;
  await registerQueues(redis, queues.prefix, catalog.queues);
  const result: ReconcileResult = { upserted: [], removed: [] };

  for (const job of catalog.scheduled()) {
    const queue = queues.get(job.queue);
    const { removeOnComplete, removeOnFail, attempts, backoff } = jobOptions(job);
    const next = await queue.upsertJobScheduler(job.name, repeatOptionsOf(job), {
      name: job.name,
      data: job.schedule?.data ?? {},
      opts: { removeOnComplete, removeOnFail, attempts, backoff },
    });
    const nextAt = typeof next?.opts.prevMillis === 'number' ? new Date(next.opts.prevMillis) : undefined;
    result.upserted.push({ id: job.name, queue: job.queue, next: nextAt });
    log.info({ schedule: job.name, queue: job.queue, spec: describeSchedule(job), next: nextAt?.toISOString() }, 'schedule registered');
  }

  const wanted = new Set(catalog.scheduled().map((j) => `${j.queue}\u0000${j.name}`));
  for (const queueName of await knownQueues(redis, queues.prefix)) {
    const queue = queues.get(queueName);
    for (const scheduler of await queue.getJobSchedulers(0, -1)) {
      const id = scheduler.id ?? scheduler.key;
      if (wanted.has(`${queueName}\u0000${id}`)) continue;
      if (await queue.removeJobScheduler(id)) {
        result.removed.push({ id, queue: queueName });
        log.warn({ schedule: id, queue: queueName }, 'removed schedule no longer in the catalog');
      }
    }
  }
  return result;
}
