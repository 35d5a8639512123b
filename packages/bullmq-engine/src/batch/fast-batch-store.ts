import { jobOptions, queueStructureKey, runScript, type RedisTx } from '@tickwork/core';
import { Queue, UnrecoverableError } from 'bullmq';
import { COMPLETE_BATCH, FAIL_BATCH, FETCH_BATCH, RECLAIM_BATCHES, RENEW_BATCHES } from './batch-lua.js';
import { BATCH_FORMAT, FENCE_LEASES, HOLD_LEASES } from './batch-lua-shared.js';
import { readOptions, retryDelay } from './batch-retry.js';
import { BatchFormatError, foreignOf, type BatchCommit, type BatchFetch, type BatchJobRef, type BatchStore, type BatchStoreOptions, type FailedAttempt, type FetchedBatchJob } from './batch-store.js';
import { appendWrites, checkSlots } from './batch-writes.js';

/** KEYS of the completion script before the keys the writes name. */
const COMPLETE_FIXED_KEYS = 5;

/**
 * The fast batch store: tickwork's scripts on BullMQ's structures (batch-lua.ts), one call to take a batch,
 * one to complete it. What each script keeps and how a batch is fenced: batch-lua-shared.ts.
 *
 * Safe beside BullMQ's stalled check (a BullMQ Worker, or any other consumer, attached to the queue): the
 * fetch and each renewal hold the check's gate (batch-lua-shared.ts). The arithmetic that keeps the hold
 * ahead of the fence: the fetch and each renewal set the deadline to t + lease and the gate to last
 * HOLD_LEASES leases from the moment the script runs (>= t, t the worker's clock when it sent the call), so
 * the gate stands until at least deadline + (HOLD_LEASES - 1) leases; the renewals of a batch that can still
 * settle come at most FENCE_LEASES + 1 leases apart (a renewal past the fence revives nothing); and a settle
 * is let through only until deadline + FENCE_LEASES leases by the worker's clock. So from the fetch of a
 * batch to its settle no stalled check runs on its queue, unless the settle spent more than a lease (8 s) on
 * its way to Redis: none of its jobs can have been moved, and every one the settle completes is its own.
 *
 * Safe beside public stores on the same queue (a rolling upgrade of BullMQ): the fetch completes, without
 * running them, the jobs a public store committed and did not acknowledge (its done records), and the
 * reclaim takes back the jobs a dead public store left in active, which the hold above would otherwise keep
 * from BullMQ's stalled check. How, at what cost, and why the reverse direction needs nothing: batch-lua-mixed.ts.
 */
export function createFastBatchStore(o: BatchStoreOptions): BatchStore {
  const { redis, blocking, queue, leaseMs } = o;
  const key = (suffix: string) => queueStructureKey(o.keyspace, queue, suffix);
  const jobPrefix = key('');
  const keep = jobOptions(o.def).removeOnComplete;
  const keepCount = keep === true ? 0 : keep === false || keep === undefined ? Number.MAX_SAFE_INTEGER : typeof keep === 'number' ? keep : (keep.count ?? Number.MAX_SAFE_INTEGER);
  const keepAgeMs = typeof keep === 'object' && 'age' in keep && keep.age !== undefined ? keep.age * 1000 : 0;
  const holdMs = leaseMs * HOLD_LEASES;
  const graceMs = leaseMs * FENCE_LEASES;
  // Each script's KEYS (batch-lua.ts), made once per queue.
  const keys = {
    fetch: ['wait', 'active', 'prioritized', 'events', 'delayed', 'meta', 'marker', 'batches', 'batch-ids', 'pc', 'batch-format', 'stalled-check', 'completed', 'batch-done'].map(key),
    complete: ['active', 'events', 'completed', 'batches', 'batch-ids'].map(key),
    fail: ['active', 'events', 'failed', 'delayed', 'wait', 'marker', 'batches', 'batch-ids'].map(key),
    renew: ['batches', 'stalled-check'].map(key),
    reclaim: ['batches', 'batch-ids', 'active', 'wait', 'failed', 'events', 'marker', 'batch-format', 'batch-public', 'batch-done', 'batch-public-scan', 'completed'].map(key),
  };
  let woken = false;
  // For queue.getWorkers() only: made at the first look (the runner's first comes a moment after its start),
  // as making it costs a few ms of CPU (BullMQ loads its scripts into the connection), off the first batches' way.
  let bullQueue: Queue | undefined;

  return {
    queue,
    mode: 'fast',
    leaseMs,

    async fetch(token: string, max: number): Promise<BatchFetch> {
      const reply = (await runScript(redis, FETCH_BATCH, keys.fetch, [jobPrefix, Date.now(), max, token, leaseMs, o.maxEvents, holdMs, BATCH_FORMAT, keepCount, keepAgeMs])) as string[];
      if (reply[0] === 'jobs') return { kind: 'jobs', jobs: JSON.parse(reply[1] as string) as FetchedBatchJob[] };
      if (reply[0] === 'paused') return { kind: 'paused' };
      if (reply[0] === 'format') throw new BatchFormatError(queue, String(reply[1]), BATCH_FORMAT);
      return reply[1] ? { kind: 'empty', nextDelayedAt: Number(reply[1]) } : { kind: 'empty' };
    },

    async waitForJobs(seconds: number): Promise<void> {
      if (woken) return;
      await blocking.bzpopmin(key('marker'), Math.max(0.01, seconds)).catch(() => undefined);
    },

    wake(): void {
      woken = true;
      blocking.disconnect();
    },

    async complete(token: string, jobs: readonly BatchJobRef[], tx: RedisTx): Promise<BatchCommit> {
      const k = [...keys.complete];
      // A kept job's attemptsMade is set with its other fields (one HSET rather than an HINCRBY more per job).
      const attempts = keepCount === 0 ? '' : jobs.map((j) => j.attempt).join(',');
      const argv: (string | number)[] = [jobPrefix, token, Date.now(), keepCount, keepAgeMs, o.maxEvents, jobs.length, graceMs, attempts];
      for (const j of jobs) argv.push(j.jobId);
      appendWrites(tx, k, COMPLETE_FIXED_KEYS, argv);
      checkSlots(redis, k, COMPLETE_FIXED_KEYS);
      const reply = await runScript(redis, COMPLETE_BATCH, k, argv);
      if (Array.isArray(reply)) return { error: `a write of the batch failed: ${String(reply[1])}` };
      return Number(reply) < 0 ? 'lost' : 'done';
    },

    async fail(token: string, failures: readonly FailedAttempt[], release: boolean, err?: unknown): Promise<string[] | undefined> {
      if (failures.length === 0 && !release) return [];
      const opts = await readOptions(redis, jobPrefix, failures.map((f) => f.id));
      const argv: (string | number)[] = [jobPrefix, token, Date.now(), o.maxEvents, release ? '1' : '0', graceMs];
      const finals: string[] = [];
      failures.forEach((f, i) => {
        const delay = f.final || err instanceof UnrecoverableError ? -1 : retryDelay(opts[i], f.attemptsMade + 1, err);
        if (delay < 0) finals.push(f.id);
        argv.push(f.id, f.reason, delay);
      });
      const settled = Number(await runScript(redis, FAIL_BATCH, keys.fail, argv));
      return settled < 0 ? undefined : finals;
    },

    async renew(tokens: readonly string[]): Promise<void> {
      if (tokens.length === 0) return;
      const now = Date.now();
      await runScript(redis, RENEW_BATCHES, keys.renew, [now, now + leaseMs, holdMs, graceMs, ...tokens]);
    },

    async giveBack(token: string): Promise<void> {
      // Its deadline set in the past: the next look for expired leases, by any worker, puts its jobs back.
      await redis.zadd(key('batches'), 'XX', 0, token);
    },

    async reclaimExpired(): Promise<{ back: number; failed: string[]; orphans: number }> {
      // The scan for a dead public store's jobs runs at most once a lease across the queue's workers (batch-lua-mixed.ts).
      const argv = [jobPrefix, Date.now(), o.maxStalledCount, o.maxEvents, BATCH_FORMAT, leaseMs];
      const [back, failed, orphans] = (await runScript(redis, RECLAIM_BATCHES, keys.reclaim, argv)) as [number, string[] | string, number?];
      if (back < 0) throw new BatchFormatError(queue, String(failed), BATCH_FORMAT);
      return { back, failed: Array.isArray(failed) ? failed : [], orphans: orphans ?? 0 };
    },

    async foreignConsumers() {
      // BullMQ names each Worker's connection after its queue; the fast store's connections carry no such name.
      bullQueue ??= new Queue(queue, { connection: redis, prefix: o.keyspace.bullPrefix });
      return foreignOf(await bullQueue.getWorkers());
    },

    async close(): Promise<void> {
      woken = true;
      blocking.disconnect();
      await bullQueue?.close().catch(() => undefined);
      redis.disconnect();
    },
  };
}
