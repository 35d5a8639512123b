import { randomUUID } from 'node:crypto';
import { jobsCancelled, jobTally, RedisTx, runScript, type AnyJob, type BatchItem, type Enqueue, type Logger, type RedisClient, type RedisOutageLog } from '@tickwork/core';
import { leasesLost, RedisStepSlotError } from '@tickwork/exactly-once';
import type { CancelListener } from '../cancel-listener.js';
import { admit, type FetchedJob } from './batch-admit.js';
import { FETCH_BATCH, RECLAIM_BATCHES } from '@tickwork/bullmq-engine';
import { completeBatch, failAttempts, type BatchQueue, type FailedAttempt } from './batch-settle.js';

export interface BatchRunnerOptions {
  q: BatchQueue;
  def: AnyJob;
  /** A connection of its own for the blocking wait for new jobs (closed to stop the wait). */
  blocking: RedisClient;
  /** The connection handlers get as `ctx.redis`. */
  appRedis: RedisClient;
  enqueue: Enqueue;
  log: Logger;
  /** How long a batch's lease lasts unrenewed; renewed and checked every quarter of it. */
  leaseMs: number;
  /** A job put back this many times after its batch's lease expired fails for good. */
  maxStalledCount: number;
  /** Jobs that failed for good are in the failed set: the DLQ routing takes them from there. */
  onFinalFailures(): void;
  /** Told how many jobs each committed batch completed (the bench counts them). */
  onCompleted?(jobs: number): void;
  /** Operators' cancel requests: a job cancelled before its batch starts ends cancelled, without running. */
  cancels?: CancelListener;
  /** The app's Redis outage log: connection errors during an outage are its to report (once), not one line each. */
  outage?: RedisOutageLog;
}

interface Fetched {
  token: string;
  jobs: FetchedJob[];
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
 * Runs one batch job's queue: `def.batch.concurrency` loops, each fetching up to `def.batch.size` jobs in one
 * script call, then per batch: admit (an invalid or cancelled job ends alone) → run the handler → settle
 * (the jobs it failed alone, then the rest completed with its `ctx.tx` writes, in one script call). A batch holds a lease,
 * renewed while it runs; a batch whose lease expired (its worker died) is put back by whichever worker
 * checks first, and a settle that finds its lease gone writes nothing (batch-lua.ts).
 */
export class BatchRunner {
  private closing = false;
  private readonly running = new Map<string, AbortController>();
  private loops: Promise<void>[] = [];
  private timer: NodeJS.Timeout | undefined;
  private waiting: Promise<void> | undefined;
  private readonly tally;

  constructor(private readonly o: BatchRunnerOptions) {
    this.tally = jobTally(o.q.queue, o.def.name);
  }

  start(): void {
    const loops = this.o.def.batch?.concurrency ?? 2;
    this.loops = Array.from({ length: loops }, () => this.loop());
    this.timer = setInterval(() => void this.tend(), Math.max(50, Math.floor(this.o.leaseMs / 4)));
    this.timer.unref();
  }

  get isRunning(): boolean {
    return !this.closing;
  }

  /** Stops fetching and waits for the batches in flight; `force` aborts them first. */
  async close(force = false): Promise<void> {
    this.closing = true;
    if (force) for (const c of this.running.values()) c.abort(new StopAbort('worker shutting down'));
    this.o.blocking.disconnect();
    await Promise.allSettled(this.loops);
    clearInterval(this.timer);
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
        if (this.closing) return;
        if (!this.o.outage?.note(err)) this.o.log.warn({ err: { message: (err as Error).message }, queue: this.o.q.queue }, 'batch fetch or settle failed; retrying');
        // A pause before the next try, so an outage is not a busy loop; a batch taken meanwhile is put back when its lease expires.
        await new Promise((r) => setTimeout(r, 1000));
      }
    }
  }

  /** A batch, or [the next delayed job's time] when there is none to take. */
  private async fetch(): Promise<Fetched | [number | undefined]> {
    const { q, def } = this.o;
    const token = randomUUID();
    const reply = (await runScript(q.redis, FETCH_BATCH, q.keys.fetch, [q.jobPrefix, Date.now(), def.batch?.size ?? 1, token, this.o.leaseMs, q.maxEvents])) as string[];
    if (reply[0] === 'jobs') return { token, jobs: JSON.parse(reply[1] as string) as Fetched['jobs'] };
    return [reply[0] === 'empty' && reply[1] ? Number(reply[1]) : undefined];
  }

  /** Waits for the queue's wake-up marker (a job added), or the next delayed job, at most a few seconds. */
  private waitForWork(nextDelayed: number | undefined): Promise<void> {
    const seconds = Math.min(MAX_IDLE_WAIT_S, nextDelayed === undefined ? MAX_IDLE_WAIT_S : (nextDelayed - Date.now()) / 1000);
    if (seconds <= 0) return Promise.resolve();
    // One blocking call at a time per runner: the other loops wait on the same one.
    this.waiting ??= this.o.blocking
      .bzpopmin(this.o.q.key('marker'), Math.max(0.01, seconds))
      .then(() => undefined, () => undefined)
      .finally(() => (this.waiting = undefined));
    return this.waiting;
  }

  /** A batch's way through the runner: admit → settle the jobs that end before it → run the handler → settle. */
  private async handle({ token, jobs }: Fetched): Promise<void> {
    const cancels = this.o.cancels;
    if (cancels && !cancels.loaded) await cancels.ready;
    const { items, invalid, cancelled } = admit(this.o.def, this.o.q.queue, jobs, cancels);
    if (invalid.length > 0) {
      this.o.log.error({ queue: this.o.q.queue, job: this.o.def.name, jobs: invalid.map((f) => ({ jobId: f.id, reason: f.reason })) }, 'batch jobs failed validation');
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
      this.count('failed', failures.length, seconds);
      await this.settleFailures(token, failures, false);
      done = items.filter((i) => !outcome.failed.has(i.jobId));
    }
    const committed = outcome.ok ? await this.commit(token, done, outcome.tx) : outcome;
    if (committed === 'done') {
      this.count('completed', done.length, seconds);
      if (done.length > 0) this.o.onCompleted?.(done.length);
      return;
    }
    if (committed === 'lost') return this.leaseLost(token, done.length);
    const reason = committed.error instanceof Error ? committed.error.message : String(committed.error);
    this.o.log.warn({ queue: this.o.q.queue, job: this.o.def.name, jobs: done.length, err: { message: reason } }, 'batch attempt failed');
    this.count('failed', done.length, seconds);
    const failures = done.map((i) => attemptOf(i, reason));
    await this.settleFailures(token, failures, true, committed.error);
  }

  /** The job metrics: each job of the batch counted, its duration the batch's handler time. */
  private count(outcome: 'completed' | 'failed', jobs: number, seconds: number): void {
    for (let i = 0; i < jobs; i++) {
      this.tally[outcome]();
      this.tally.observe(seconds);
    }
  }

  /** Completes the batch with its writes; a write refused (its slot, its type) fails the attempt instead. */
  private async commit(token: string, items: BatchItem<unknown>[], tx: RedisTx): Promise<'done' | 'lost' | { error: unknown }> {
    try {
      const result = await completeBatch(this.o.q, token, items, tx);
      return typeof result === 'string' ? result : { error: new Error(result.error) };
    } catch (error) {
      if (error instanceof RedisStepSlotError) return { error };
      throw error;
    }
  }

  private async runHandler(token: string, items: BatchItem<unknown>[]): Promise<HandlerOutcome> {
    const { def, q } = this.o;
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
      const ctx = { jobs: items, log: this.o.log.child({ queue: q.queue, job: def.name, batch: token }), jobName: def.name, queue: q.queue, signal: controller.signal, tx, fail, enqueue: this.o.enqueue, redis: this.o.appRedis };
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
    const { q, def } = this.o;
    await this.settleFailures(token, jobs, release);
    for (const j of jobs) {
      jobsCancelled.inc({ queue: q.queue, job: def.name });
      this.o.log.info({ queue: q.queue, job: def.name, jobId: j.id, reason: j.reason }, 'job cancelled before its batch started');
      await this.o.cancels?.finished(q.queue, j.id);
    }
  }

  private async settleFailures(token: string, failures: FailedAttempt[], release: boolean, err?: unknown): Promise<void> {
    const finals = await failAttempts(this.o.q, token, failures, release, err);
    if (!finals) this.leaseLost(token, failures.length);
    else if (finals.length > 0) this.o.onFinalFailures();
  }

  /**
   * A batch stopped by a shutdown is not a failed attempt of its jobs: its lease is given up (its deadline
   * set in the past), so the next look for expired leases, by any worker, puts its jobs back at once.
   */
  private async giveBack(token: string, jobs: number): Promise<void> {
    this.o.log.warn({ queue: this.o.q.queue, job: this.o.def.name, batch: token, jobs }, 'batch stopped by the shutdown; its jobs go back to the queue');
    await this.o.q.redis.zadd(this.o.q.key('batches'), 'XX', 0, token);
  }

  private leaseLost(token: string, jobs: number): void {
    leasesLost.inc({ queue: this.o.q.queue, job: this.o.def.name });
    this.o.log.error({ queue: this.o.q.queue, job: this.o.def.name, batch: token, jobs }, "batch's lease was lost before it was settled: nothing was written, its jobs run again in another batch");
  }

  /** Renews the leases of the batches in flight, then puts back batches whose lease expired (anyone's). */
  private async tend(): Promise<void> {
    const { q } = this.o;
    try {
      if (this.running.size > 0) {
        const deadline = Date.now() + this.o.leaseMs;
        const args: (string | number)[] = [];
        for (const token of this.running.keys()) args.push(deadline, token);
        await q.redis.zadd(q.key('batches'), 'XX', 'GT', ...args);
      }
      const [back, failed] = (await runScript(q.redis, RECLAIM_BATCHES, q.keys.reclaim, [q.jobPrefix, Date.now(), this.o.maxStalledCount, q.maxEvents])) as [number, string[]];
      if (back > 0 || failed.length > 0) this.o.log.warn({ queue: q.queue, putBack: back, failed: failed.length }, "batches' leases expired: their jobs were put back");
      if (failed.length > 0) this.o.onFinalFailures();
    } catch (err) {
      if (!this.closing && !this.o.outage?.note(err)) this.o.log.warn({ err: { message: (err as Error).message }, queue: q.queue }, 'could not renew or reclaim batch leases; retrying');
    }
  }
}
