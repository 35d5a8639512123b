import { randomUUID } from 'node:crypto';
import { queueStructureKey, runScript, type RedisTx } from '@tickwork/core';
import { Queue, UnrecoverableError, Worker, type Job } from 'bullmq';
import { COMMIT_BATCH, DROP_RECORD, LEASE_CHECK, LEASE_CLOCK, LEASE_EXPIRE, LEASE_OPEN, LEASE_RENEW } from './public-batch-lua.js';
import { foreignOf, TICKWORK_BATCH_WORKER, type BatchCommit, type BatchFetch, type BatchJobRef, type BatchStore, type BatchStoreOptions, type FailedAttempt, type FetchedBatchJob } from './batch-store.js';
import { appendWrites, checkSlots } from './batch-writes.js';
import { failUnreadableActive, isJobDecodeError } from '../unreadable.js';
import { closeWorker } from '../worker/close-worker.js';

export interface PublicBatchStoreOptions extends BatchStoreOptions {
  /** How often BullMQ's stalled check runs (it takes back the jobs of a worker that died). Default: the lease. */
  stalledIntervalMs?: number;
}

/** A job of a batch: the BullMQ Job and the token its lock holds. */
interface Held {
  job: Job;
  lock: string;
}

/** A BullMQ lock lasts this many leases from its last extension (it must outlast the lease: see below). */
const LOCK_LEASES = 2;
/** Jobs asked of BullMQ at once while a batch is filled (one moveToActive each). */
const FETCH_WAVE = 16;
/** How long done records outlive the last commit (a record whose acknowledgement never came: its job was removed). */
const DONE_TTL_MS = 7 * 24 * 3600_000;
/** KEYS of the commit script before the keys the writes name. */
const COMMIT_FIXED_KEYS = 2;
/** Done records looked at per sweep (one every quarter lease, only while there are records). */
const SWEEP_RECORDS = 100;
/** How long past its lock the public mark outlasts each action that has BullMQ lock a job (batch-lua-mixed.ts). */
const MARK_SLACK_MS = 60_000;

/**
 * Test-only: a function a test's jobs module puts under this global symbol runs between a batch's commit
 * and its acknowledgements, where a test kills the process (apps/worker batch-mixed.test.ts). Never set
 * otherwise; looked up once per committed batch.
 */
const AFTER_COMMIT = Symbol.for('tickwork.test.publicBatchStore.afterCommit');
type AfterCommit = (queue: string, token: string, jobIds: readonly string[]) => Promise<void>;
const afterCommit = (): AfterCommit | undefined => {
  const hook: unknown = Reflect.get(globalThis, AFTER_COMMIT);
  return typeof hook === 'function' ? (hook as AfterCommit) : undefined;
};

/**
 * The public batch store: BullMQ's public API only (a Worker without a processor, `worker.getNextJob` to take
 * jobs, `job.extendLock`, `job.moveToCompleted`, `job.moveToFailed`, `job.moveToWait`,
 * `worker.startStalledCheckTimer`, `queue.isPaused`, `queue.getWorkers`), for a BullMQ that does not match
 * the engine's contract. Each job is BullMQ's to deliver, lock, retry (its attempts and backoff), fail (to
 * the failed set, where the DLQ routing takes it) and take back when its worker dies (BullMQ's stalled check,
 * once its lock expires). Slower than the fast store: a round trip per job to take it and another to
 * acknowledge it.
 *
 * Effects once, with tickwork's own keys (public-batch-lua.ts): a batch's `ctx.tx` writes are committed by
 * one script together with a done record per job, only while the batch holds its lease and only if none of
 * its jobs has a record already; then each job is acknowledged (moveToCompleted) and its record dropped. A
 * job delivered again whose record says done (its worker died between the commit and the acknowledgement)
 * is completed without running; records a worker left behind for jobs already completed are swept. The lease ends before the locks of its jobs: it is opened (Redis's clock t0,
 * deadline t0 + lease) before its jobs are locked (at t >= t0, for 2 leases), and a renewal reads Redis's
 * clock t0, then extends every lock (at t >= t0), then moves the deadline to t0 + lease, only if every lock
 * was still the batch's and the lease had not lapsed. So while a batch holds its lease each of its jobs has
 * held its lock without a break since the batch took it: nobody else took it meanwhile (BullMQ's stalled
 * check leaves a locked job alone), and a commit the lease lets through is the only one of those jobs.
 *
 * Beside fast stores on the same queue (a rolling upgrade of BullMQ), batch-lua-mixed.ts: they honour the
 * done records, and take back this store's jobs when it dies, while the `batch-public` mark, set before each
 * fetch, renewal and blocking wait, says it may hold some. This store needs nothing of theirs.
 */
export function createPublicBatchStore(o: PublicBatchStoreOptions): BatchStore {
  const { redis, queue, leaseMs, log } = o;
  const leasesKey = queueStructureKey(o.keyspace, queue, 'batch-leases');
  const doneKey = queueStructureKey(o.keyspace, queue, 'batch-done');
  const marked = [leasesKey, queueStructureKey(o.keyspace, queue, 'batch-public')];
  const lockMs = leaseMs * LOCK_LEASES;
  const markMs = lockMs + MARK_SLACK_MS;
  const worker = new Worker(queue, null, {
    connection: o.blocking,
    prefix: o.keyspace.bullPrefix,
    name: TICKWORK_BATCH_WORKER,
    autorun: false,
    lockDuration: lockMs,
    stalledInterval: o.stalledIntervalMs ?? leaseMs,
    maxStalledCount: o.maxStalledCount,
    // The longest blocking wait for a job (s), as the fast store's.
    drainDelay: 5,
  });
  worker.on('error', (err) => log?.warn({ err: { message: err.message }, queue }, 'batch queue BullMQ worker error'));
  void worker.startStalledCheckTimer();
  const bullQueue = new Queue(queue, { connection: redis, prefix: o.keyspace.bullPrefix });
  const batches = new Map<string, Map<string, Held>>();
  /** Jobs a blocking wait took (under a lock token of its own), for the next fetch. */
  const pending: Held[] = [];
  let waiting: Promise<void> | undefined;
  let woken = false;
  let sweepCursor = '0';
  let wake!: () => void;
  const wokenUp = new Promise<void>((resolve) => (wake = resolve));

  /** Acknowledges jobs whose effects are committed, then drops their done records. */
  async function acknowledge(list: readonly Held[]): Promise<void> {
    const acked = await Promise.allSettled(list.map((h) => h.job.moveToCompleted(null, h.lock, false)));
    const ids: string[] = [];
    acked.forEach((r, i) => {
      const id = list[i]?.job.id as string;
      if (r.status === 'fulfilled') ids.push(id);
      // Its record stays: delivered again (its lock expired), it completes without running.
      else log?.warn({ queue, jobId: id, err: { message: (r.reason as Error).message } }, 'batch job committed, its acknowledgement refused; it completes when delivered again');
    });
    if (ids.length > 0) await redis.hdel(doneKey, ...ids);
  }

  /**
   * Drops done records whose job BullMQ will not deliver again (completed, or gone: removed on completion): a
   * worker that died after its acknowledgements and before it dropped their records leaves them. A record
   * of a job still active or waiting is kept (it completes that job when delivered), and so is a failed
   * one's (a retry must not commit its effects again).
   */
  async function sweepRecords(): Promise<void> {
    if ((await redis.hlen(doneKey)) === 0) return;
    const [cursor, flat] = await redis.hscan(doneKey, sweepCursor, 'COUNT', SWEEP_RECORDS);
    sweepCursor = cursor;
    for (let i = 0; i + 1 < flat.length; i += 2) {
      const id = flat[i] as string;
      const state = await bullQueue.getJobState(id);
      if (state === 'completed' || state === 'unknown') await runScript(redis, DROP_RECORD, [doneKey], [id, flat[i + 1] as string]);
    }
  }

  /** Sends jobs back to wait (no failed attempt): a batch that stopped, or lost its lease. */
  async function putBack(list: Iterable<Held>): Promise<void> {
    await Promise.allSettled([...list].map((h) => h.job.moveToWait(h.lock)));
  }

  /**
   * BullMQ locked a job as `lock` and could not decode it (its data or options are not JSON): failed for good
   * (fenced by `lock`), for the caller to dead-letter, so it is not delivered again and again (unreadable.ts).
   */
  async function failUnreadable(lock: string, held: ReadonlyMap<string, Held>): Promise<void> {
    const inBatch = (id: string) => held.has(id) || [...batches.values()].some((b) => b.has(id));
    const failed = await failUnreadableActive(bullQueue, redis, { skip: inBatch, tokenOf: () => lock });
    if (failed.length > 0) o.onUnreadable?.(failed);
  }

  /** Up to `max` jobs locked as `token`: those a blocking wait took first, then BullMQ's next ones. */
  async function take(token: string, max: number): Promise<Map<string, Held>> {
    const held = new Map<string, Held>();
    // Extended after the lease opened, so that the lease ends before their locks.
    while (pending.length > 0 && held.size < max) {
      const p = pending.shift() as Held;
      if ((await p.job.extendLock(p.lock, lockMs).catch(() => 0)) === 1) held.set(p.job.id as string, p);
    }
    try {
      while (held.size < max) {
        const wave = await Promise.allSettled(Array.from({ length: Math.min(FETCH_WAVE, max - held.size) }, () => worker.getNextJob(token, { block: false })));
        let drained = false;
        let undecodable = false;
        let error: unknown;
        for (const r of wave) {
          if (r.status === 'rejected') {
            if (isJobDecodeError(r.reason)) undecodable = true;
            else error ??= r.reason;
          } else if (r.value?.id !== undefined) held.set(r.value.id, { job: r.value, lock: token });
          else drained = true;
        }
        // The jobs of the wave that were taken are kept whatever else failed: they are locked as this batch's.
        if (undecodable) await failUnreadable(token, held);
        if (error !== undefined) throw error;
        if (drained) break;
      }
    } catch (err) {
      // Jobs taken before the error run in this batch; none taken: the caller retries.
      if (held.size === 0) throw err;
    }
    return held;
  }

  return {
    queue,
    mode: 'public',
    leaseMs,

    async fetch(token: string, max: number): Promise<BatchFetch> {
      await runScript(redis, LEASE_OPEN, marked, [token, leaseMs, markMs]);
      const held = await take(token, max).catch(async (err: unknown) => {
        await redis.zrem(leasesKey, token);
        throw err;
      });
      // Jobs whose effects a batch committed before its worker died: completed without running.
      const ids = [...held.keys()];
      const records = ids.length > 0 ? await redis.hmget(doneKey, ...ids) : [];
      const done = ids.filter((id, i) => records[i] === String(held.get(id)?.job.timestamp));
      if (done.length > 0) {
        await acknowledge(done.map((id) => held.get(id) as Held));
        for (const id of done) held.delete(id);
      }
      if (held.size === 0) {
        await redis.zrem(leasesKey, token);
        return (await bullQueue.isPaused()) ? { kind: 'paused' } : { kind: 'empty' };
      }
      batches.set(token, held);
      const jobs: FetchedBatchJob[] = [...held.values()].map(({ job }) => [job.id as string, job.name, JSON.stringify(job.data ?? {}), job.attemptsMade]);
      return { kind: 'jobs', jobs };
    },

    /** BullMQ's blocking wait: its wake-up marker, at most drainDelay (5 s) or until the next delayed job is due. */
    async waitForJobs(): Promise<void> {
      if (woken) return;
      const lock = randomUUID();
      // Marked before BullMQ may lock a job for this store.
      waiting ??= runScript(redis, LEASE_CLOCK, marked, [markMs])
        .then(() => worker.getNextJob(lock, { block: true }))
        .then(
          (job) => {
            if (job?.id === undefined) return;
            if (woken) void job.moveToWait(lock).catch(() => undefined);
            else pending.push({ job, lock });
          },
          (err: unknown) => (isJobDecodeError(err) ? failUnreadable(lock, new Map()).catch(() => undefined) : undefined),
        )
        .finally(() => (waiting = undefined));
      await Promise.race([waiting, wokenUp]);
    },

    wake(): void {
      woken = true;
      wake();
    },

    async complete(token: string, jobs: readonly BatchJobRef[], tx: RedisTx): Promise<BatchCommit> {
      const held = batches.get(token);
      const list = jobs.flatMap((j) => held?.get(j.jobId) ?? []);
      if (!held || list.length !== jobs.length) return 'lost';
      const keys = [leasesKey, doneKey];
      const argv: (string | number)[] = [token, list.length, DONE_TTL_MS, ...list.map((h) => h.job.id as string), ...list.map((h) => String(h.job.timestamp))];
      appendWrites(tx, keys, COMMIT_FIXED_KEYS, argv);
      checkSlots(redis, keys, COMMIT_FIXED_KEYS);
      const reply = await runScript(redis, COMMIT_BATCH, keys, argv);
      if (Array.isArray(reply)) return { error: `a write of the batch failed: ${String(reply[1])}` };
      batches.delete(token);
      if (Number(reply) < 0) {
        // Nothing written: its jobs run again (one done already completes without running when delivered).
        await putBack(held.values());
        return 'lost';
      }
      await afterCommit()?.(queue, token, list.map((h) => h.job.id as string));
      await acknowledge(list);
      return 'done';
    },

    async fail(token: string, failures: readonly FailedAttempt[], release: boolean, err?: unknown): Promise<string[] | undefined> {
      if (failures.length === 0 && !release) return [];
      const holds = Number(await runScript(redis, LEASE_CHECK, [leasesKey], [token, release ? '1' : '0'])) === 1;
      const held = batches.get(token);
      if (release) batches.delete(token);
      if (!holds || !held) return undefined;
      const final = await Promise.all(
        failures.map(async (f) => {
          const h = held.get(f.id);
          held.delete(f.id);
          if (!h) return false;
          // BullMQ retries it by its own attempts and backoff unless the error is unrecoverable.
          const error = f.final || err instanceof UnrecoverableError ? new UnrecoverableError(f.reason) : new Error(f.reason);
          h.job.finishedOn = undefined;
          try {
            await h.job.moveToFailed(error, h.lock, false);
            // moveToFailed stamps finishedOn only on a failure for good.
            return h.job.finishedOn !== undefined;
          } catch (e) {
            log?.warn({ queue, jobId: f.id, err: { message: (e as Error).message } }, "batch job's failed attempt refused (its lock lost); BullMQ's stalled check takes it back");
            return false;
          }
        }),
      );
      return failures.filter((_, i) => final[i]).map((f) => f.id);
    },

    async renew(tokens: readonly string[]): Promise<void> {
      const t0 = Number(await runScript(redis, LEASE_CLOCK, marked, [markMs]));
      await Promise.all(
        tokens.map(async (token) => {
          const held = batches.get(token);
          if (!held) return;
          const extended = await Promise.all([...held.values()].map((h) => h.job.extendLock(h.lock, lockMs).catch(() => 0)));
          // A lock lost (it expired): the batch may no longer settle.
          if (extended.every((r) => r === 1)) await runScript(redis, LEASE_RENEW, [leasesKey], [token, t0 + leaseMs]);
          else await redis.zrem(leasesKey, token);
        }),
      );
    },

    async giveBack(token: string): Promise<void> {
      await redis.zrem(leasesKey, token);
      const held = batches.get(token);
      batches.delete(token);
      if (held) await putBack(held.values());
    },

    async reclaimExpired(): Promise<{ back: number; failed: string[] }> {
      // The jobs are BullMQ's stalled check's to take back (their locks expire); the leases and records are tickwork's.
      await runScript(redis, LEASE_EXPIRE, [leasesKey], []);
      await sweepRecords();
      return { back: 0, failed: [] };
    },

    async foreignConsumers() {
      return foreignOf(await bullQueue.getWorkers());
    },

    async close(): Promise<void> {
      woken = true;
      wake();
      await putBack(pending.splice(0));
      // Its blocking wait (waitForJobs) ends at once rather than after up to drainDelay: BullMQ's close sends
      // QUIT, which Redis answers once the wait is over (closeWorker says why it is safe).
      await closeWorker(worker).catch(() => undefined);
      await bullQueue.close().catch(() => undefined);
      o.blocking.disconnect();
      redis.disconnect();
    },
  };
}
