import {
  moveToDeadLetter,
  noteFailedAttempt,
  registerQueues,
  type Alerter,
  type Catalog,
  type Logger,
  type QueueSet,
} from '@tickwork/runtime';
import type { Job, Worker } from 'bullmq';
import type { Redis } from 'ioredis';

export interface DeadLetterRoutingOptions {
  queues: QueueSet;
  redis: Redis;
  catalog: Catalog;
  log: Logger;
  alerter: Alerter;
  /** How often the failed sets are swept for final failures whose move was lost (crash, Redis blip). */
  sweepIntervalMs: number;
}

export interface DeadLetterRouting {
  /** Hooks a worker's failed/completed events. */
  attach(worker: Worker): void;
  /** Moves every job sitting in the failed set of the watched queues; returns how many were moved. */
  sweep(): Promise<number>;
  /** Stops sweeping and waits for moves in progress. */
  close(): Promise<void>;
}

const SWEEP_BATCH = 200;

/**
 * Routes final failures to the DLQ. The `failed` event moves a job at once; the sweep (at start, then
 * every `sweepIntervalMs`) catches jobs whose event was lost because the process died between BullMQ
 * marking the job failed and the move. Every job in a failed set is a final failure (retries wait in
 * delayed/wait), and a moved job leaves the failed set, so the sweep never re-sends old entries.
 */
export function createDeadLetterRouting(opts: DeadLetterRoutingOptions): DeadLetterRouting {
  const watched = new Set<string>();
  const pending = new Set<Promise<unknown>>();
  let sweeping: Promise<number> | undefined;
  let timer: NodeJS.Timeout | undefined;
  let closed = false;

  const track = <T>(p: Promise<T>): Promise<T> => {
    pending.add(p);
    void p.finally(() => pending.delete(p)).catch(() => undefined);
    return p;
  };

  const move = async (job: Job): Promise<boolean> => {
    const moved = await moveToDeadLetter({ job, queues: opts.queues, redis: opts.redis, catalog: opts.catalog });
    if (!moved) return false;
    const { dlqQueue, dlqJobId, entry } = moved.deadLetter;
    if (moved.claimed) {
      opts.log.warn(
        { queue: entry.originQueue, job: entry.jobName, jobId: entry.originalJobId, dlqQueue, dlqJobId, reason: entry.failureReason },
        'job dead-lettered',
      );
      await opts.alerter.deadLettered(moved.deadLetter);
    }
    return true;
  };

  const onFailed = (job: Job | undefined) => {
    if (!job) return;
    const final = typeof job.finishedOn === 'number';
    const work: Promise<unknown> = final ? move(job) : noteFailedAttempt(opts.redis, opts.queues.get(job.queueName), String(job.id), Date.now());
    track(work).catch((err: Error) =>
      opts.log.error(
        { err: { message: err.message }, queue: job.queueName, jobId: job.id },
        final ? 'dead-letter move failed; the sweep will retry it' : 'could not note the failed attempt',
      ),
    );
  };

  const onCompleted = (job: Job) => {
    if (!job.repeatJobKey) return;
    track(opts.alerter.scheduledRunSucceeded(job.queueName, job.repeatJobKey)).catch((err: Error) =>
      opts.log.warn({ err: { message: err.message }, schedule: job.repeatJobKey }, 'could not reset the consecutive failure count'),
    );
  };

  const sweepOnce = async (): Promise<number> => {
    let moved = 0;
    for (const queue of watched) {
      // Each batch removes what it moved, so re-reading the head pages through the set; a job that
      // cannot be moved ends the queue's sweep for this round instead of looping on it.
      for (;;) {
        const failed = (await opts.queues.get(queue).getFailed(0, SWEEP_BATCH - 1)).filter(Boolean);
        let progress = 0;
        for (const job of failed) if (await move(job)) progress++;
        moved += progress;
        if (failed.length < SWEEP_BATCH || progress < failed.length) break;
      }
    }
    if (moved > 0) opts.log.info({ moved }, 'dead-letter sweep moved failed jobs');
    return moved;
  };

  const sweep = (): Promise<number> => {
    sweeping ??= track(sweepOnce()).finally(() => {
      sweeping = undefined;
    });
    return sweeping;
  };

  const schedule = () => {
    if (closed) return;
    timer = setTimeout(() => {
      sweep()
        .catch((err: Error) => opts.log.warn({ err: { message: err.message } }, 'dead-letter sweep failed; will retry'))
        .finally(schedule);
    }, opts.sweepIntervalMs);
    timer.unref();
  };

  return {
    attach(worker) {
      watched.add(worker.name);
      worker.on('failed', onFailed);
      worker.on('completed', onCompleted);
      // Operator tools (dlq list/redrive) find a queue through the registry even if no scheduler runs.
      track(registerQueues(opts.redis, opts.queues.prefix, [worker.name])).catch(() => undefined);
      if (!timer && !closed) {
        // First sweep right away: picks up what a previous process left behind when it died.
        queueMicrotask(() => {
          sweep().catch((err: Error) => opts.log.warn({ err: { message: err.message } }, 'initial dead-letter sweep failed'));
        });
        schedule();
      }
    },
    sweep,
    async close() {
      closed = true;
      clearTimeout(timer);
      await Promise.allSettled([...pending]);
    },
  };
}
