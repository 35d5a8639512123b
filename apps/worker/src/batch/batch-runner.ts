import { randomUUID } from 'node:crypto';
import { BatchFormatError, type BatchStore, type FailedAttempt, type FetchedBatchJob } from '@tickwork/bullmq-engine';
import { jobOptions, jobsCancelled, jobTally, RedisTx, type AnyJob, type BatchItem, type Enqueue, type Logger, type RedisClient, type RedisOutageLog } from '@tickwork/core';
import { leasesLost, RedisStepSlotError } from '@tickwork/exactly-once';
import type { QueueTimeline } from '@tickwork/operations';
import type { CancelListener } from '../cancel-listener.js';
import { admit } from './batch-admit.js';
import { FIRST_FOREIGN_CHECK_MS, FOREIGN_CHECK_MS, ForeignConsumerWatch } from './foreign-consumers.js';

export interface BatchRunnerOptions {
  /**
   * Everything the runner does to Redis (@tickwork/bullmq-engine: the fast store, or the public one on a
   * BullMQ that does not match the engine's contract). The runner closes it.
   */
  store: BatchStore;
  def: AnyJob;
  /** The connection handlers get as `ctx.redis`. */
  appRedis: RedisClient;
  enqueue: Enqueue;
  log: Logger;
  /** Jobs that failed for good are in the failed set: the DLQ routing takes them from there. */
  onFinalFailures(): void;
  /** Told how many jobs each committed batch completed (the bench counts them). */
  onCompleted?(jobs: number): void;
  /** Operators' cancel requests: a job cancelled before its batch starts ends cancelled, without running. */
  cancels?: CancelListener;
  /** The app's Redis outage log: connection errors during an outage are its to report (once), not one line each. */
  outage?: RedisOutageLog;
  /** How often the runner looks for consumers it does not own on its queue (default a minute). */
  foreignCheckMs?: number;
  /** The queue's counts for the charts: each job of a batch counted, its run time the batch's. */
  timeline?: QueueTimeline | undefined;
}

interface Fetched {
  token: string;
  jobs: FetchedBatchJob[];
}

/** How a batch's handler ended: returned (its writes, and the jobs it failed alone), or threw. */
type HandlerOutcome = { ok: true; tx: RedisTx; failed: Map<string, string> } | { ok: false; error: unknown };

const DEFAULT_TIMEOUT_MS = 5 * 60_000;
/** The longest wait for the queue's wake-up marker: a missed marker (a paused queue resumed) costs at most this. */
const MAX_IDLE_WAIT_S = 5;

/** The failed attempt of a job the handler was given (it may be retried). */
const attemptOf = (item: BatchItem<unknown>, reason: string): FailedAttempt => ({ id: item.jobId, attemptsMade: item.attempt - 1, reason, final: false });

/** The abort of a batch by a stop (shutdown past its deadline, or a stop while Redis is down): not the batch's failure. */
class StopAbort extends Error {
  override name = 'StopAbort';
}

/**
 * Runs one batch job's queue: `def.batch.concurrency` loops, each fetching up to `def.batch.size` jobs from
 * its store, then per batch: admit (an invalid or cancelled job ends alone) → run the handler → settle (the
 * jobs it failed alone, then the rest completed with its `ctx.tx` writes). A batch holds a lease, renewed
 * while it runs; a batch whose lease expired (its worker died) is put back by whichever worker checks first,
 * and a settle that finds its lease gone writes nothing (the store's fence: @tickwork/bullmq-engine batch/).
 * A queue whose batch keys another tickwork's format wrote is refused: the runner stops, saying why.
 */
export class BatchRunner {
  private closing = false;
  private readonly running = new Map<string, AbortController>();
  private loops: Promise<void>[] = [];
  private timers: NodeJS.Timeout[] = [];
  private waiting: Promise<void> | undefined;
  private readonly tally;
  private readonly store: BatchStore;
  private readonly queue: string;
  private readonly foreign: ForeignConsumerWatch;
  private closed: Promise<void> | undefined;

  constructor(private readonly o: BatchRunnerOptions) {
    this.store = o.store;
    this.queue = o.store.queue;
    this.tally = jobTally(this.queue, o.def.name);
    this.foreign = new ForeignConsumerWatch(o.store, o.log, o.outage);
  }

  start(): void {
    const loops = this.o.def.batch?.concurrency ?? 2;
    this.loops = Array.from({ length: loops }, () => this.loop());
    const every = this.o.foreignCheckMs ?? FOREIGN_CHECK_MS;
    this.timers = [
      setInterval(() => void this.tend(), Math.max(50, Math.floor(this.store.leaseMs / 4))),
      // The first look a moment after the start, off the first batches' way; then every `every`.
      setTimeout(() => void this.foreign.check(), Math.min(FIRST_FOREIGN_CHECK_MS, every)),
      setInterval(() => void this.foreign.check(), every),
    ];
    for (const t of this.timers) t.unref();
  }

  get isRunning(): boolean {
    return !this.closing;
  }

  /** Stops fetching and waits for the batches in flight (`force` aborts them first), then closes the store. */
  async close(force = false): Promise<void> {
    this.closing = true;
    if (force) for (const c of this.running.values()) c.abort(new StopAbort('worker shutting down'));
    this.store.wake();
    await Promise.allSettled(this.loops);
    for (const t of this.timers) clearInterval(t);
    this.closed ??= this.store.close();
    await this.closed;
  }

  /** Aborts every batch in flight (a stop while Redis is unreachable). */
  abort(reason: string): void {
    this.closing = true;
    for (const c of this.running.values()) c.abort(new StopAbort(reason));
  }

  private async loop(): Promise<void> {
    while (!this.closing) {
      try {
        const got = await this.fetch();
        if (Array.isArray(got)) await this.waitForWork(got[0]);
        else await this.handle(got);
      } catch (err) {
        if (err instanceof BatchFormatError) return this.refuse(err);
        if (this.closing) return;
        if (!this.o.outage?.note(err)) this.o.log.warn({ err: { message: (err as Error).message }, queue: this.queue }, 'batch fetch or settle failed; retrying');
        // A pause before the next try, so an outage is not a busy loop; a batch taken meanwhile is put back when its lease expires.
        await new Promise((r) => setTimeout(r, 1000));
      }
    }
  }

  /**
   * A queue whose batch keys another format wrote: the runner stops (its readiness fails) rather than
   * misread them, and says so once.
   */
  private refuse(err: BatchFormatError): void {
    if (this.closing) return;
    this.closing = true;
    for (const t of this.timers) clearInterval(t);
    this.store.wake();
    this.o.log.error({ queue: this.queue, job: this.o.def.name, found: err.found, expected: err.expected }, err.message);
  }

  /** A batch, or [the next delayed job's time] when there is none to take. */
  private async fetch(): Promise<Fetched | [number | undefined]> {
    const token = randomUUID();
    const got = await this.store.fetch(token, this.o.def.batch?.size ?? 1);
    if (got.kind === 'jobs') return { token, jobs: got.jobs };
    return [got.kind === 'empty' ? got.nextDelayedAt : undefined];
  }

  /** Waits for the queue's wake-up marker (a job added), or the next delayed job, at most a few seconds. */
  private waitForWork(nextDelayed: number | undefined): Promise<void> {
    const seconds = Math.min(MAX_IDLE_WAIT_S, nextDelayed === undefined ? MAX_IDLE_WAIT_S : (nextDelayed - Date.now()) / 1000);
    if (seconds <= 0) return Promise.resolve();
    // One blocking call at a time per runner: the other loops wait on the same one.
    this.waiting ??= this.store
      .waitForJobs(seconds)
      .catch(() => undefined)
      .finally(() => (this.waiting = undefined));
    return this.waiting;
  }

  /** A batch's way through the runner: admit → settle the jobs that end before it → run the handler → settle. */
  private async handle({ token, jobs }: Fetched): Promise<void> {
    const cancels = this.o.cancels;
    if (cancels && !cancels.loaded) await cancels.ready;
    const { items, invalid, cancelled } = admit(this.o.def, this.queue, jobs, cancels);
    if (invalid.length > 0) {
      this.o.log.error({ queue: this.queue, job: this.o.def.name, jobs: invalid.map((f) => ({ jobId: f.id, reason: f.reason })) }, 'batch jobs failed validation');
      await this.settleFailures(token, invalid, items.length === 0 && cancelled.length === 0);
    }
    if (cancelled.length > 0) await this.cancelled(token, cancelled, items.length === 0);
    if (items.length === 0) return;
    const started = performance.now();
    const outcome = await this.runHandler(token, items);
    await this.settle(token, items, outcome, (performance.now() - started) / 1000);
  }

  /**
   * Settles a batch after its handler: the jobs it failed (`ctx.fail`) as failed attempts, then the rest
   * completed with its writes, which releases the batch. A handler that threw, or writes Redis refused,
   * fail every job's attempt; a stop gives the batch back.
   */
  private async settle(token: string, items: BatchItem<unknown>[], outcome: HandlerOutcome, seconds: number): Promise<void> {
    if (!outcome.ok && outcome.error instanceof StopAbort) return this.giveBack(token, items.length);
    let done = items;
    if (outcome.ok && outcome.failed.size > 0) {
      const failures = items.filter((i) => outcome.failed.has(i.jobId)).map((i) => attemptOf(i, outcome.failed.get(i.jobId) as string));
      this.count('failed', items.filter((i) => outcome.failed.has(i.jobId)), seconds);
      await this.settleFailures(token, failures, false);
      done = items.filter((i) => !outcome.failed.has(i.jobId));
    }
    const committed = outcome.ok ? await this.commit(token, done, outcome.tx) : outcome;
    if (committed === 'done') {
      this.count('completed', done, seconds);
      if (done.length > 0) this.o.onCompleted?.(done.length);
      return;
    }
    if (committed === 'lost') return this.leaseLost(token, done.length);
    const reason = committed.error instanceof Error ? committed.error.message : String(committed.error);
    this.o.log.warn({ queue: this.queue, job: this.o.def.name, jobs: done.length, err: { message: reason } }, 'batch attempt failed');
    this.count('failed', done, seconds);
    const failures = done.map((i) => attemptOf(i, reason));
    await this.settleFailures(token, failures, true, committed.error);
  }

  /**
   * The job metrics and the charts' counts: each job of the batch counted, its duration the batch's handler
   * time. A failed job is retried in the charts while its job's retry policy has attempts left.
   */
  private count(outcome: 'completed' | 'failed', items: readonly BatchItem<unknown>[], seconds: number): void {
    const attempts = this.o.timeline && outcome === 'failed' ? (jobOptions(this.o.def).attempts ?? 1) : 0;
    for (const item of items) {
      this.tally[outcome]();
      this.tally.observe(seconds);
      this.o.timeline?.attempt(outcome === 'completed' ? 'completed' : item.attempt >= attempts ? 'failed' : 'retried', seconds * 1000, -1);
    }
  }

  /** Completes the batch with its writes; a write refused (its slot, its type) fails the attempt instead. */
  private async commit(token: string, items: BatchItem<unknown>[], tx: RedisTx): Promise<'done' | 'lost' | { error: unknown }> {
    try {
      const result = await this.store.complete(token, items, tx);
      return typeof result === 'string' ? result : { error: new Error(result.error) };
    } catch (error) {
      if (error instanceof RedisStepSlotError) return { error };
      throw error;
    }
  }

  private async runHandler(token: string, items: BatchItem<unknown>[]): Promise<HandlerOutcome> {
    const { def } = this.o;
    const queue = this.queue;
    const controller = new AbortController();
    this.running.set(token, controller);
    const timeoutMs = def.timeoutMs ?? DEFAULT_TIMEOUT_MS;
    const timer = setTimeout(() => controller.abort(new Error(`batch timed out after ${timeoutMs} ms`)), timeoutMs);
    const tx = new RedisTx();
    const failed = new Map<string, string>();
    const fail = (jobId: string, reason: string | Error) => {
      if (!items.some((i) => i.jobId === jobId)) throw new TypeError(`ctx.fail: job ${JSON.stringify(jobId)} is not in this batch`);
      failed.set(jobId, reason instanceof Error ? reason.message : String(reason));
    };
    const aborted = new Promise<never>((_, reject) => controller.signal.addEventListener('abort', () => reject(controller.signal.reason as Error), { once: true }));
    try {
      const handler = def.batch?.handler;
      if (!handler) throw new Error(`${def.name} is not a batch job`);
      const ctx = { jobs: items, log: this.o.log.child({ queue, job: def.name, batch: token }), jobName: def.name, queue, signal: controller.signal, tx, fail, enqueue: this.o.enqueue, redis: this.o.appRedis };
      await Promise.race([handler(ctx), aborted]);
      return { ok: true, tx, failed };
    } catch (error) {
      return { ok: false, error };
    } finally {
      clearTimeout(timer);
      this.running.delete(token);
    }
  }

  /**
   * Jobs an operator cancelled before their batch started end failed with `cancelled by ...`, for good (the
   * DLQ move leaves such a failure alone), counted as cancelled; their requests are cleared, so an
   * operator's retry runs them.
   */
  private async cancelled(token: string, jobs: FailedAttempt[], release: boolean): Promise<void> {
    const { def } = this.o;
    const queue = this.queue;
    await this.settleFailures(token, jobs, release);
    for (const j of jobs) {
      jobsCancelled.inc({ queue, job: def.name });
      this.o.log.info({ queue, job: def.name, jobId: j.id, reason: j.reason }, 'job cancelled before its batch started');
      await this.o.cancels?.finished(queue, j.id);
    }
  }

  private async settleFailures(token: string, failures: FailedAttempt[], release: boolean, err?: unknown): Promise<void> {
    const finals = await this.store.fail(token, failures, release, err);
    if (!finals) this.leaseLost(token, failures.length);
    else if (finals.length > 0) this.o.onFinalFailures();
  }

  /** A batch stopped by a shutdown is not a failed attempt of its jobs: the store gives them back (the fast one as a stall). */
  private async giveBack(token: string, jobs: number): Promise<void> {
    this.o.log.warn({ queue: this.queue, job: this.o.def.name, batch: token, jobs }, 'batch stopped by the shutdown; its jobs go back to the queue');
    await this.store.giveBack(token);
  }

  private leaseLost(token: string, jobs: number): void {
    leasesLost.inc({ queue: this.queue, job: this.o.def.name });
    this.o.log.error({ queue: this.queue, job: this.o.def.name, batch: token, jobs }, "batch's lease was lost before it was settled: nothing was written, its jobs run again in another batch");
  }

  /** Renews the leases of the batches in flight, then puts back batches whose lease expired (anyone's). */
  private async tend(): Promise<void> {
    try {
      if (this.running.size > 0) await this.store.renew([...this.running.keys()]);
      const { back, failed, orphans = 0 } = await this.store.reclaimExpired();
      if (back > orphans || failed.length > 0) this.o.log.warn({ queue: this.queue, putBack: back - orphans, failed: failed.length }, "batches' leases expired: their jobs were put back");
      if (orphans > 0) this.o.log.warn({ queue: this.queue, putBack: orphans }, 'jobs a dead BullMQ worker (a public batch store) left active were put back');
      if (failed.length > 0) this.o.onFinalFailures();
    } catch (err) {
      if (err instanceof BatchFormatError) return this.refuse(err);
      if (!this.closing && !this.o.outage?.note(err)) this.o.log.warn({ err: { message: (err as Error).message }, queue: this.queue }, 'could not renew or reclaim batch leases; retrying');
    }
  }
}
