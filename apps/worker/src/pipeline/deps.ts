import type { Catalog, Enqueue, Logger, QueueSet, RedisClient } from '@tickwork/core';
import type { ExactlyOnce } from '@tickwork/exactly-once';
import type { TimelineWriter } from '@tickwork/operations';
import type { Job } from 'bullmq';
import type { CancelListener } from '../cancel-listener.js';
import type { RunningJobs } from '../running-jobs.js';
import type { StallProgress } from '../stall-progress.js';

/** What the processor (processor.ts) and its stages work with, given once per worker process. */
export interface ProcessorDeps {
  catalog: Catalog;
  redis: RedisClient;
  enqueue: Enqueue;
  /** The app's queues: a batch of occurrences hands an occurrence on as a job of its own there (pipeline/occurrence-batch.ts). */
  queueSet?: QueueSet;
  /** The Worker's concurrency per queue: how many occurrences of batches may run at once with the queue's other runs. */
  concurrency?: number;
  log: Logger;
  /** Idempotency ledger, overlap guard and locks. */
  exactlyOnce: ExactlyOnce;
  /**
   * The connection BullMQ acknowledges jobs of `queue` on (the Worker's own): the ledger writes each
   * result there ahead of the acknowledgement (see CompletionWriter). Without it, results are awaited on
   * the ledger's connection.
   */
  ackConnectionOf?: (queue: string) => Promise<RedisClient> | undefined;
  /** SCHEDULE_GRACE_MS: an occurrence starting later than this after its time is judged by its missed-run policy. */
  graceMs?: number;
  /** Operators' cancel requests (cancel-listener.ts); without it jobs cannot be cancelled. */
  cancels?: CancelListener;
  /** The running jobs, for cancels and shutdown to abort (running-jobs.ts); without it nothing aborts a run from outside. */
  running?: RunningJobs;
  /**
   * Whether a job's delivery is provably its only one (recovery/sole-delivery.ts): then a `ctx.step` on its
   * first delivery runs without claiming the run first, the claim riding with the step's record. Without it,
   * such a step claims first.
   */
  soleDelivery?: (job: Job) => boolean;
  /**
   * Stalls and progress (stall-progress.ts): a step recorded after a stall starts the job's stall count
   * again, and on BullMQ's public paths a job stalled too often without progress fails. Without it stalls
   * are counted as BullMQ counts them.
   */
  stallProgress?: StallProgress;
  /** WORKER_MAX_STALLED_COUNT, for the reason a job stalled too often fails with (default 2). */
  maxStalledCount?: number;
  /**
   * The charts' history (CHART_HISTORY; @tickwork/operations timeline/): each attempt's end adds to its
   * queue's counts in memory (and a catalog schedule's run to its schedule's), flushed every few seconds.
   * Without it nothing is counted.
   */
  timeline?: TimelineWriter;
}

/** The result a late occurrence dropped by its missed-run policy completes with (also in the ledger). */
export interface MissedRunResult {
  skipped: 'missed';
  reason: string;
}
