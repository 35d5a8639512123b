import { QueueSet, type Logger, type RedisClient } from '@tickwork/core';
import { failUnreadableActive, type StallBook, type UnreadableJob } from '@tickwork/bullmq-engine';
import type { Worker } from 'bullmq';
import type { DeadLetterRouting } from './dead-letter.js';

export interface UnreadableJobsOptions {
  /** The command connection the checks use (a queue set of their own is made on it, closed with them). */
  redis: RedisClient;
  prefix: string;
  log: Logger;
  deadLetter?: DeadLetterRouting | undefined;
  /** Whether this process runs the job (running-jobs.ts): a job it runs was read. */
  isRunning: (queue: string, jobId: string) => boolean;
  /** The engine's reader of lock tokens (fast path): a Worker's own jobs are then failed under their token, dropping the lock. */
  stalls?: StallBook | undefined;
}

export interface UnreadableJobs {
  /**
   * `queue`'s Worker reported an error that may be a job it could not decode (isJobDecodeError): its active
   * jobs that cannot be read are failed for good and dead-lettered as raw entries. Checks of one queue never
   * overlap: one asked for during a check runs once after it.
   */
  check(queue: string, worker?: Worker): void;
  /** Reports jobs the caller failed itself (a batch store's fetch), then dead-letters them. */
  failed(queue: string, jobs: readonly UnreadableJob[]): void;
  /** Waits for the checks in flight, then closes the checks' queues. */
  close(): Promise<void>;
}

/**
 * A job whose stored data or options are not JSON can never run: BullMQ locks it as it delivers it, throws
 * decoding it and leaves it in `active`, to be delivered again after its lock expires, forever (see
 * @tickwork/bullmq-engine unreadable.ts). This ends it the first time it is delivered: failed for good with
 * why (`job data is not JSON: ...`), logged, and moved to the DLQ at once as a raw entry keeping the stored
 * strings, while every other job goes on.
 */
export function createUnreadableJobs(o: UnreadableJobsOptions): UnreadableJobs {
  const queues = new QueueSet(o.redis, o.prefix, o.log);
  const running = new Map<string, Promise<void>>();
  const again = new Set<string>();
  const reporting = new Set<Promise<unknown>>();

  const report = (queue: string, jobs: readonly UnreadableJob[]): Promise<unknown> => {
    const p = Promise.all(
      jobs.map(async (job) => {
        o.log.error({ queue, job: job.name, jobId: job.id, reason: job.reason }, 'job cannot be read (its stored data or options are not JSON): failed for good, to the dead-letter queue as a raw entry');
        // The sweep retries a move that fails here.
        await o.deadLetter?.moveById(queue, job.id).catch((err: Error) => o.log.warn({ err: { message: err.message }, queue, jobId: job.id }, 'dead-letter move of an unreadable job failed; the sweep will retry it'));
      }),
    );
    reporting.add(p);
    void p.finally(() => reporting.delete(p));
    return p;
  };

  const run = async (queue: string, worker: Worker | undefined): Promise<void> => {
    const tokens = new Map<string, string>();
    if (o.stalls && worker) for (const { id, token } of await o.stalls.activeLockedBy(o.redis, worker, worker.id)) tokens.set(id, token);
    const failed = await failUnreadableActive(queues.get(queue), o.redis, { skip: (id) => o.isRunning(queue, id), tokenOf: (id) => tokens.get(id) });
    await report(queue, failed);
  };

  const check = (queue: string, worker?: Worker): void => {
    if (running.has(queue)) {
      again.add(queue);
      return;
    }
    const p = run(queue, worker)
      .catch((err: Error) => o.log.warn({ err: { message: err.message }, queue }, 'could not look for unreadable jobs; the next delivery that fails looks again'))
      .finally(() => {
        running.delete(queue);
        if (again.delete(queue)) check(queue, worker);
      });
    running.set(queue, p);
  };

  return {
    check,
    failed(queue, jobs) {
      void report(queue, jobs);
    },
    async close() {
      again.clear();
      await Promise.allSettled([...running.values()]);
      await Promise.allSettled([...reporting]);
      await queues.close();
    },
  };
}
