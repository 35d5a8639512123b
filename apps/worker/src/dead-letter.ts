import { deliveryOf, registerQueues, scheduleIdOf, type Catalog, type Logger, type QueueSet, type RedisClient } from '@tickwork/core';
import { moveFailedJob, moveToDeadLetter, noteFailedAttempt, type Alerter, type MoveResult, type TimelineWriter } from '@tickwork/operations';
import type { Job, Worker } from 'bullmq';

export interface DeadLetterRoutingOptions {
  queues: QueueSet;
  redis: RedisClient;
  catalog: Catalog;
  log: Logger;
  /** The process's outage log: a sweep that fails while Redis is known to be down is its to report. */
  outage?: { readonly down: boolean } | undefined;
  alerter: Alerter;
  /** How often the failed sets are swept for final failures whose move was lost (crash, Redis blip). */
  sweepIntervalMs: number;
  /** The charts' history: each move counts once in its origin queue's dead-lettered (the move that claimed it). */
  timeline?: TimelineWriter | undefined;
}

export interface DeadLetterRouting {
  /** Hooks a worker's failed/completed events. */
  attach(worker: Worker): void;
  /** Sweeps `queue`'s failed set like a worker's (a batch job's queue: its final failures are moved by sweeps). */
  watch(queue: string): void;
  /** Moves every job sitting in the failed set of the watched queues; returns how many were moved. */
  sweep(): Promise<number>;
  /**
   * Moves one failed job by id, read from its raw hash if BullMQ cannot read it (a raw entry); resolves
   * whether it left the failed set. For a job failed without a worker's `failed` event (unreadable-jobs.ts).
   */
  moveById(queue: string, jobId: string): Promise<boolean>;
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

  /** Logs and alerts a move; returns whether the job left the failed set through it (or a racing move). */
  const reported = async (moved: MoveResult | undefined): Promise<boolean> => {
    if (!moved) return false;
    const { dlqQueue, dlqJobId, entry } = moved.deadLetter;
    if (moved.claimed) {
      opts.timeline?.queue(moved.deadLetter.entry.originQueue).deadLettered();
      const fields = { queue: entry.originQueue, job: entry.jobName, jobId: entry.originalJobId, dlqQueue, dlqJobId, reason: entry.failureReason };
      if (entry.unparsedReason) opts.log.error({ ...fields, unparsedReason: entry.unparsedReason }, 'job dead-lettered as a raw entry');
      else opts.log.warn(fields, 'job dead-lettered');
      // The entry is safe in the DLQ: an alert that cannot be sent must not make the move look failed.
      await opts.alerter.deadLettered(moved.deadLetter).catch((err: Error) =>
        opts.log.error({ err: { message: err.message }, dlqQueue, dlqJobId }, 'could not send the dead-letter alert'),
      );
    }
    return true;
  };
  const move = async (job: Job): Promise<boolean> =>
    reported(await moveToDeadLetter({ job, queues: opts.queues, redis: opts.redis, catalog: opts.catalog }));

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
    const delivery = deliveryOf(job);
    // A re-driven old run succeeding says nothing about the schedule's current runs: only those reset it.
    const schedule = delivery.redrive ? undefined : scheduleIdOf(delivery);
    if (!schedule) return;
    track(opts.alerter.scheduledRunSucceeded(job.queueName, schedule)).catch((err: Error) =>
      opts.log.warn({ err: { message: err.message }, schedule }, 'could not reset the consecutive failure count'),
    );
  };

  /**
   * One queue's failed set, oldest first, by id. Each job's move is isolated: one that throws is logged
   * and stays for the next round, and every other job of the queue is still moved. A moved job leaves the
   * set and every other id counts as stuck, so the next page starts after the stuck ones and the loop ends.
   */
  const sweepQueue = async (queue: string): Promise<number> => {
    let moved = 0;
    let stuck = 0;
    for (;;) {
      const ids = await opts.queues.get(queue).getRanges(['failed'], stuck, stuck + SWEEP_BATCH - 1, true);
      for (const jobId of ids) {
        try {
          const result = await moveFailedJob({ queue, jobId, queues: opts.queues, redis: opts.redis, catalog: opts.catalog });
          // Not moved: gone meanwhile, or an id without a job hash; either way step over it this round.
          if (await reported(result)) moved++;
          else stuck++;
        } catch (err) {
          stuck++;
          opts.log.error({ err: { message: (err as Error).message }, queue, jobId }, 'could not dead-letter a failed job; the next sweep retries it');
        }
      }
      if (ids.length < SWEEP_BATCH) return moved;
    }
  };

  const sweepOnce = async (): Promise<number> => {
    let moved = 0;
    for (const queue of watched) {
      try {
        moved += await sweepQueue(queue);
      } catch (err) {
        // One queue's failure (e.g. its failed set unreadable) does not stop the sweep of the others.
        if (!opts.outage?.down) opts.log.warn({ err: { message: (err as Error).message }, queue }, 'dead-letter sweep of a queue failed; will retry');
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
        .catch((err: Error) => opts.outage?.down || opts.log.warn({ err: { message: err.message } }, 'dead-letter sweep failed; will retry'))
        .finally(schedule);
    }, opts.sweepIntervalMs);
    timer.unref();
  };

  const watch = (queue: string) => {
    watched.add(queue);
    // Operator tools (dlq list/redrive) find a queue through the registry even if no scheduler runs.
    track(registerQueues(opts.redis, opts.queues.prefix, [queue])).catch(() => undefined);
    if (!timer && !closed) {
      // First sweep right away: picks up what a previous process left behind when it died.
      queueMicrotask(() => {
        sweep().catch((err: Error) => opts.log.warn({ err: { message: err.message } }, 'initial dead-letter sweep failed'));
      });
      schedule();
    }
  };

  const moveById = (queue: string, jobId: string): Promise<boolean> =>
    track(moveFailedJob({ queue, jobId, queues: opts.queues, redis: opts.redis, catalog: opts.catalog }).then(reported));

  return {
    attach(worker) {
      worker.on('failed', onFailed);
      worker.on('completed', onCompleted);
      watch(worker.name);
    },
    watch,
    sweep,
    moveById,
    async close() {
      closed = true;
      clearTimeout(timer);
      await Promise.allSettled([...pending]);
    },
  };
}
