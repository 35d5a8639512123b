import type { AnyJob, Logger, QueueKeyspace, RedisClient, RedisTx } from '@tickwork/core';
import type { UnreadableJob } from '../unreadable.js';

/**
 * Everything a batch job's runner (apps/worker batch/batch-runner.ts) does to Redis, behind one interface,
 * made two ways: the fast store (fast-batch-store.ts: tickwork's scripts on BullMQ's structures, one call to
 * take a batch and one to complete it) and the public store (public-batch-store.ts: BullMQ's public API
 * only, for a BullMQ that does not match the engine's contract). Both keep the guarantees of
 * docs/batch-jobs.md: a batch's `ctx.tx` writes are committed once per job, fenced by the batch's lease.
 */

/**
 * A fetched job: [id, name, data as stored (JSON, unless a producer wrote something else), attempts made before
 * this one, and its options as stored only when they are not JSON (such a job cannot run: batch-admit.ts)].
 */
export type FetchedBatchJob = readonly [id: string, name: string, data: string, attemptsMade: number, unreadableOptions?: string];

/** What a fetch found: a batch (its jobs hold the batch's lease), a paused queue, or none (and when the next delayed job is due, if known). */
export type BatchFetch = { kind: 'jobs'; jobs: FetchedBatchJob[] } | { kind: 'paused' } | { kind: 'empty'; nextDelayedAt?: number };

/** A job the handler was given, as the store needs it to complete it. */
export interface BatchJobRef {
  readonly jobId: string;
  /** This attempt's number (attempts made before it + 1). */
  readonly attempt: number;
}

/** One job's failed attempt: its id, how many attempts it had made before this one, and why it failed. */
export interface FailedAttempt {
  id: string;
  attemptsMade: number;
  reason: string;
  /** No retry whatever the job's attempts (an invalid payload, an unknown job, a cancel). */
  final: boolean;
}

/** The outcome of a completion: committed; the lease was lost (nothing written); or a write Redis refused (the jobs not completed). */
export type BatchCommit = 'done' | 'lost' | { error: string };

/** A BullMQ Worker attached to the queue that is not a tickwork batch runner's (queue.getWorkers()). */
export interface ForeignConsumer {
  /** The connection's name (`<prefix>:<queue in base64>[:w:<worker name>]`). */
  name: string;
  /** Its client address and id, as CLIENT LIST gives them (empty when unknown). */
  addr: string;
  id: string;
}

export interface BatchStore {
  readonly queue: string;
  readonly mode: 'fast' | 'public';
  /** How long a batch holds its lease unrenewed (the runner renews every quarter of it). */
  readonly leaseMs: number;
  /** Takes up to `max` jobs as batch `token`, under a new lease. */
  fetch(token: string, max: number): Promise<BatchFetch>;
  /** Waits for new jobs (the queue's wake-up marker) at most about `seconds`; resolves at once after wake(). */
  waitForJobs(seconds: number): Promise<void>;
  /** Ends a wait in progress, and makes every later one resolve at once (the runner is stopping). */
  wake(): void;
  /** Completes `jobs` with the batch's writes, fenced by its lease; the batch ends unless a write was refused. */
  complete(token: string, jobs: readonly BatchJobRef[], tx: RedisTx): Promise<BatchCommit>;
  /**
   * Settles failed attempts: each job retried by its own options (`attempts`, `backoff`) or failed for good
   * (to the failed set, where the DLQ routing takes it). `release` ends the batch. Resolves the ids that
   * failed for good, or undefined when the lease was lost (nothing written).
   */
  fail(token: string, failures: readonly FailedAttempt[], release: boolean, err?: unknown): Promise<string[] | undefined>;
  /** Renews the leases of the batches in flight (and whatever else keeps their jobs theirs). */
  renew(tokens: readonly string[]): Promise<void>;
  /** Gives a batch's jobs back without a failed attempt (a shutdown stopped it). */
  giveBack(token: string): Promise<void>;
  /**
   * Puts back the jobs of batches whose lease expired (any worker's); those stalled too often fail for good.
   * `orphans`: of the jobs put back, those a dead BullMQ Worker (a public store's) had left in active.
   */
  reclaimExpired(): Promise<{ back: number; failed: string[]; orphans?: number }>;
  /** BullMQ Workers attached to the queue that no tickwork batch runner owns (they may move its jobs). */
  foreignConsumers(): Promise<ForeignConsumer[]>;
  /** Releases the store's connections (call after the runner's loops ended). */
  close(): Promise<void>;
}

/** What either store is made from (the engine's facade makes one or the other). */
export interface BatchStoreOptions {
  /** The store's command connection; close() disconnects it. */
  redis: RedisClient;
  /** A connection of its own for the wait for new jobs (the public store's BullMQ Worker runs on it); close() disconnects it. */
  blocking: RedisClient;
  keyspace: QueueKeyspace;
  queue: string;
  /** The batch job: its `removeOnComplete` (keepCompleted) says which completed jobs the fast store keeps. */
  def: AnyJob;
  /** The events stream's approximate length (EVENTS_MAX_LEN). */
  maxEvents: number;
  /** How long a batch holds its lease unrenewed. */
  leaseMs: number;
  /** A job whose batch was lost (its worker died) this many times fails for good. */
  maxStalledCount: number;
  /** Where the store reports what it cannot hand back to its caller (an acknowledgement BullMQ refused). */
  log?: Logger;
  /**
   * Jobs the store failed for good while fetching because BullMQ could not decode them (the public store:
   * unreadable.ts), for the caller to dead-letter. The fast store hands such jobs to its caller instead.
   */
  onUnreadable?: (jobs: readonly UnreadableJob[]) => void;
}

/** The name a public store's BullMQ Worker goes by (`:w:<name>` in its connection's name), so no runner takes it for a foreign consumer. */
export const TICKWORK_BATCH_WORKER = 'tickwork-batch';

/** A queue whose batch keys another format wrote (another tickwork version): this one refuses to run it rather than misread them. */
export class BatchFormatError extends Error {
  override name = 'BatchFormatError';
  constructor(
    readonly queue: string,
    readonly found: string,
    readonly expected: string,
  ) {
    super(
      `batch job queue ${queue}: its batch keys (batches, batch-ids) are in format ${JSON.stringify(found)} (the marker <queue>:batch-format), this worker reads and writes format ${JSON.stringify(expected)}; not running it. Run the tickwork version that wrote them until its batches settle, or delete the marker once no batch of that version is in flight`,
    );
  }
}

/** The workers of `getWorkers()` that are not a tickwork batch store's (entries without a connection name, e.g. GCP's refusal of CLIENT LIST, are not consumers). */
export function foreignOf(workers: readonly Record<string, string>[]): ForeignConsumer[] {
  const own = `:w:${TICKWORK_BATCH_WORKER}`;
  return workers.flatMap((w) => {
    const name = w['rawname'];
    return name && !name.endsWith(own) ? [{ name, addr: w['addr'] ?? '', id: w['id'] ?? '' }] : [];
  });
}
