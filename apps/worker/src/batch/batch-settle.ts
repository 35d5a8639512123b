import { jobOptions, keyOutsideSlot, queueStructureKey, runScript, RedisTx, type AnyJob, type BatchItem, type QueueKeyspace, type RedisClient } from '@tickwork/core';
import { RedisStepSlotError } from '@tickwork/exactly-once';
import { Backoffs, UnrecoverableError, type JobsOptions } from 'bullmq';
import { COMPLETE_BATCH, FAIL_BATCH } from '@tickwork/bullmq-engine';

/** The keys and constants one queue's batch scripts share. */
export interface BatchQueue {
  readonly redis: RedisClient;
  readonly queue: string;
  /** `<bull prefix>:<queue>:`, the prefix of the queue's job hashes. */
  readonly jobPrefix: string;
  readonly key: (suffix: string) => string;
  readonly maxEvents: number;
  /** Completed jobs kept (the definition's `removeOnComplete`): 0 deletes them on completion. */
  readonly keepCount: number;
  readonly keepAgeMs: number;
  /** Each script's KEYS (batch-lua.ts), made once per queue. */
  readonly keys: { readonly fetch: readonly string[]; readonly complete: readonly string[]; readonly fail: readonly string[]; readonly reclaim: readonly string[] };
}

export function batchQueue(redis: RedisClient, ks: QueueKeyspace, queue: string, def: AnyJob, maxEvents: number): BatchQueue {
  const keep = jobOptions(def).removeOnComplete;
  const keepCount = keep === true ? 0 : keep === false || keep === undefined ? Number.MAX_SAFE_INTEGER : typeof keep === 'number' ? keep : (keep.count ?? Number.MAX_SAFE_INTEGER);
  const keepAgeMs = typeof keep === 'object' && 'age' in keep && keep.age !== undefined ? keep.age * 1000 : 0;
  const key = (s: string) => queueStructureKey(ks, queue, s);
  const keys = {
    fetch: ['wait', 'active', 'prioritized', 'events', 'delayed', 'meta', 'marker', 'batches', 'batch-ids', 'pc'].map(key),
    complete: ['active', 'events', 'completed', 'batches', 'batch-ids'].map(key),
    fail: ['active', 'events', 'failed', 'delayed', 'wait', 'marker', 'batches', 'batch-ids'].map(key),
    reclaim: ['batches', 'batch-ids', 'active', 'wait', 'failed', 'events', 'marker'].map(key),
  };
  return { redis, queue, jobPrefix: key(''), key, maxEvents, keepCount, keepAgeMs, keys };
}

/**
 * Completes `jobs` with the batch's Redis writes, in one script call fenced by the batch's lease (batch-lua.ts):
 * 'done'; 'lost' when the lease was (nothing written, another worker has the jobs); or the error of a write
 * that failed (the jobs not completed, the lease kept: the caller fails the attempt).
 */
export async function completeBatch(q: BatchQueue, token: string, jobs: readonly BatchItem<unknown>[], tx: RedisTx): Promise<'done' | 'lost' | { error: string }> {
  const keys = [...q.keys.complete];
  // A kept job's attemptsMade is set with its other fields (one HSET rather than an HINCRBY more per job).
  const attempts = q.keepCount === 0 ? '' : jobs.map((j) => j.attempt).join(',');
  const argv: (string | number)[] = [q.jobPrefix, token, Date.now(), q.keepCount, q.keepAgeMs, q.maxEvents, jobs.length, attempts];
  for (const j of jobs) argv.push(j.jobId);
  for (const c of tx.commands) {
    const key = String(c[1]);
    if (!keys.includes(key, 5)) keys.push(key);
    argv.push(c.length, ...c);
  }
  checkSlots(q, keys);
  const reply = await runScript(q.redis, COMPLETE_BATCH, keys, argv);
  if (Array.isArray(reply)) return { error: `a write of the batch failed: ${String(reply[1])}` };
  return Number(reply) < 0 ? 'lost' : 'done';
}

/**
 * On Redis Cluster a batch's writes must share its queue's slot: the script completing the batch runs on
 * one. Thrown before anything is sent, naming the key and the hash tag to give it.
 */
function checkSlots(q: BatchQueue, keys: readonly string[]): void {
  if (!q.redis.isCluster || keys.length <= 5) return;
  const outside = keyOutsideSlot(keys[0] as string, keys.slice(5));
  if (outside) {
    const { key, tag } = outside;
    throw new RedisStepSlotError(`the batch writes ${JSON.stringify(key)}, outside its queue's slot: on Redis Cluster the keys a batch writes must contain the queue's hash tag ${tag} (e.g. "myapp:${tag}:totals")`);
  }
}

/** One job's failed attempt: its id, how many attempts it had made before this one, and why it failed. */
export interface FailedAttempt {
  id: string;
  attemptsMade: number;
  reason: string;
  /** No retry whatever the job's attempts (an invalid payload, an unknown job). */
  final: boolean;
}

/**
 * Settles failed attempts: each job is retried by its own options (`attempts`, `backoff`, read from its hash:
 * options written by a producer are the job's) or fails for good, in one script call fenced by the lease.
 * `release` ends the batch. Resolves the ids that failed for good (for the DLQ), or undefined when the lease
 * was lost.
 */
export async function failAttempts(q: BatchQueue, token: string, failures: readonly FailedAttempt[], release: boolean, err?: unknown): Promise<string[] | undefined> {
  if (failures.length === 0 && !release) return [];
  const opts = await readOptions(q, failures);
  const argv: (string | number)[] = [q.jobPrefix, token, Date.now(), q.maxEvents, release ? '1' : '0'];
  const finals: string[] = [];
  failures.forEach((f, i) => {
    const delay = f.final || err instanceof UnrecoverableError ? -1 : retryDelay(opts[i], f.attemptsMade + 1, err);
    if (delay < 0) finals.push(f.id);
    argv.push(f.id, f.reason, delay);
  });
  const settled = Number(await runScript(q.redis, FAIL_BATCH, q.keys.fail, argv));
  return settled < 0 ? undefined : finals;
}

/** Each job's options as stored in its hash; a job whose options are not JSON counts as having none. */
async function readOptions(q: BatchQueue, failures: readonly FailedAttempt[]): Promise<(JobsOptions | undefined)[]> {
  if (failures.length === 0) return [];
  const pipe = q.redis.pipeline();
  for (const f of failures) pipe.hget(q.jobPrefix + f.id, 'opts');
  const replies = (await pipe.exec()) ?? [];
  return replies.map(([e, raw]) => {
    if (e || typeof raw !== 'string') return undefined;
    try {
      const parsed: unknown = JSON.parse(raw);
      return parsed && typeof parsed === 'object' ? (parsed as JobsOptions) : undefined;
    } catch {
      return undefined;
    }
  });
}

/**
 * The delay before the next attempt in ms, 0 for none, or -1 when the job has used its attempts (BullMQ's
 * default is one attempt). A backoff BullMQ does not know retries at once rather than losing the job.
 */
function retryDelay(opts: JobsOptions | undefined, attemptsMade: number, err: unknown): number {
  const attempts = typeof opts?.attempts === 'number' && opts.attempts >= 1 ? opts.attempts : 1;
  if (attemptsMade >= attempts) return -1;
  if (opts?.backoff === undefined) return 0;
  try {
    // No job is passed: only custom strategies (which a batch worker does not register) read it.
    const backoff = Backoffs.normalize(opts.backoff);
    const delay = backoff ? Backoffs.calculate(backoff, attemptsMade, err as Error, undefined as never, undefined) : 0;
    return typeof delay === 'number' && Number.isFinite(delay) && delay > 0 ? Math.round(delay) : 0;
  } catch {
    return 0;
  }
}
