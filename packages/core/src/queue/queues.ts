import { Queue, type JobsOptions } from 'bullmq';
import type { RedisClient } from '../redis/connection.js';
import type { AnyJob } from '../job/define-job.js';
import type { Logger } from '../logger.js';
import { bullmqTelemetry } from '../telemetry/traces.js';
import { DLQ_SUFFIX, keyspaceOn, type QueueKeyspace } from '../redis/keyspace.js';

export const DEFAULT_ATTEMPTS = 3;

/**
 * Entries kept in each queue's BullMQ event stream (`<prefix>:<queue>:events`; BullMQ's default is 10,000).
 * tickwork reads no events (its history and metrics are written by the worker); the stream is for
 * QueueEvents listeners of your own, which see events live and need little backlog.
 */
export const EVENTS_MAX_LEN = 1000;

/** The dead-letter queue that receives the final failures of `queue`. */
export function dlqName(queue: string): string {
  return `${queue}${DLQ_SUFFIX}`;
}

/** Default BullMQ job options for a catalog job: its retry policy, and bounded retention of finished jobs. */
export function jobOptions(job: AnyJob): JobsOptions {
  const attempts = job.retry?.attempts ?? DEFAULT_ATTEMPTS;
  const backoff = job.retry?.backoff ?? { type: 'exponential' as const, delayMs: 1000 };
  return {
    attempts,
    backoff: { type: backoff.type, delay: backoff.delayMs },
    // Completed jobs are only kept for inspection; the idempotency ledger, not BullMQ, remembers what ran.
    removeOnComplete: job.batch?.keepCompleted === 0 ? true : { age: 24 * 3600, count: job.batch?.keepCompleted ?? 5000 },
    // Failed jobs are copied to the DLQ on their final failure, so the failed set can be trimmed.
    removeOnFail: { age: 7 * 24 * 3600, count: 10000 },
    ...(job.priority !== undefined && { priority: job.priority }),
  };
}

/** One Queue per name, sharing a connection, each with an error listener (an unhandled 'error' crashes node). */
export class QueueSet {
  private readonly queues = new Map<string, Queue>();

  constructor(
    private readonly connection: RedisClient,
    readonly prefix: string,
    private readonly log: Logger,
    /** Takes connection errors (an outage is logged once, see redis-startup.ts); true when it did. */
    private readonly connectionError: (err: unknown) => boolean = () => false,
  ) {}

  /** The connection the queues share, for reads BullMQ has no call for (a DLQ page's ids). */
  get redis(): RedisClient {
    return this.connection;
  }

  /** Where `name`'s keys live (redis/keyspace.ts): as always on one Redis, under the queue's own tag on a cluster. */
  keyspace(name: string): QueueKeyspace {
    return keyspaceOn(this.connection, this.prefix, name);
  }

  get(name: string): Queue {
    let queue = this.queues.get(name);
    if (!queue) {
      const telemetry = bullmqTelemetry();
      queue = new Queue(name, {
        connection: this.connection,
        prefix: this.keyspace(name).bullPrefix,
        streams: { events: { maxLen: EVENTS_MAX_LEN } },
        // Traces on (telemetry/start.ts): each add is a producer span whose context travels in the job.
        ...(telemetry && { telemetry }),
      });
      queue.on('error', (err) => {
        if (!this.connectionError(err)) this.log.error({ err, queue: name }, 'queue error');
      });
      this.queues.set(name, queue);
    }
    return queue;
  }

  async close(): Promise<void> {
    await Promise.all([...this.queues.values()].map((q) => q.close()));
    this.queues.clear();
  }
}
