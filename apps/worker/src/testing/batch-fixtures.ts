/**
 * Test-only catalog of a batch job (loaded in process, or by real worker processes through JOBS_MODULE).
 * Its effects are Redis writes committed with the batch (`ctx.tx`), under `bt:`, so tests can count them.
 */
import { createCatalog, defineBatchJob, defineJob, type BatchContext } from '@tickwork/core';
import { z } from 'zod';

export const BT_KEYS = {
  /** Every job id whose effect was committed (a set: a second commit of one job would not show here)... */
  done: 'bt:done',
  /** ...so the effects are also counted: a job committed twice counts twice. */
  count: 'bt:count',
  /** The size of each committed batch. */
  sizes: 'bt:sizes',
  /** Every job id a handler was given, once per time (a list: a job handled twice shows twice). */
  handled: 'bt:handled',
  /** A pause in ms for the next batch to start (taken by that batch alone), so a test can kill or freeze its worker. */
  pauseOnce: 'bt:pause-once',
  /** Set while a batch is in its pause: its job ids. */
  paused: 'bt:paused',
  /** A pause in ms for every batch (while set), so batches outlast a BullMQ Worker's stalled interval. */
  slowEvery: 'bt:slow-every',
};

const schema = z.object({
  n: z.number().int(),
  /** Every batch holding this job fails its attempts before this one. */
  failUntilAttempt: z.number().int().default(0),
  /** The handler fails this job alone (ctx.fail), every attempt. */
  reject: z.boolean().default(false),
  /** A batch holding this job also writes a key of the wrong type (Redis refuses the write). */
  badWrite: z.boolean().default(false),
});

/**
 * Idempotent because: its effects are `ctx.tx` writes, committed with the jobs' completion only while the
 * batch holds its lease, so a batch handled again after a crash or a takeover commits them once.
 */
async function handler(ctx: BatchContext<z.output<typeof schema>>): Promise<void> {
  await ctx.redis.rpush(BT_KEYS.handled, ...ctx.jobs.map((j) => j.jobId));
  const [pauseOnce, slowEvery] = await Promise.all([ctx.redis.getdel(BT_KEYS.pauseOnce), ctx.redis.get(BT_KEYS.slowEvery)]);
  const pauseMs = Number(pauseOnce) || Number(slowEvery);
  if (pauseMs > 0) {
    await ctx.redis.set(BT_KEYS.paused, ctx.jobs.map((j) => j.jobId).join(','));
    await new Promise((r) => setTimeout(r, pauseMs));
  }
  if (ctx.jobs.some((j) => j.attempt < j.data.failUntilAttempt)) throw new Error('this batch fails its attempt');
  for (const j of ctx.jobs) if (j.data.reject) ctx.fail(j.jobId, 'rejected by the handler');
  const kept = ctx.jobs.filter((j) => !j.data.reject);
  if (kept.length === 0) return;
  ctx.tx.sadd(BT_KEYS.done, ...kept.map((j) => j.jobId));
  ctx.tx.incrby(BT_KEYS.count, kept.length);
  ctx.tx.rpush(BT_KEYS.sizes, kept.length);
  if (ctx.jobs.some((j) => j.data.badWrite)) ctx.tx.incrby(BT_KEYS.handled, 1);
}

export const batchJob = defineBatchJob({
  name: 'bt.sum',
  queue: 'bt',
  schema,
  batch: { size: 100, concurrency: 2, handler },
  retry: { attempts: 3, backoff: { type: 'fixed', delayMs: 50 } },
});

/** An ordinary job on another queue, so a pool serves batch and per-job queues side by side. */
export const plainJob = defineJob({
  name: 'bt.plain',
  queue: 'bt-plain',
  schema: z.object({}),
  handler: async () => 'plain',
});

/** A batch job whose batches outlast their timeout whenever a pause is set. */
export const slowBatchJob = defineBatchJob({
  name: 'bt.slow',
  queue: 'bt-slow',
  schema: z.object({}),
  timeoutMs: 200,
  retry: { attempts: 1 },
  batch: { size: 10, handler: (ctx) => new Promise((resolve) => ctx.signal.addEventListener('abort', () => resolve(), { once: true })) },
});

export const catalog = createCatalog([batchJob, plainJob, slowBatchJob]);

/**
 * BT_HALT_AFTER_COMMIT=1 in a worker process on the public batch store (WORKER_BULLMQ_FAST_PATH=off): each
 * batch stops for good between its commit (its effects and done records written) and its acknowledgements,
 * after printing `bt: halted after commit`, so a test can kill the process exactly there. Through the
 * public store's test-only hook (@tickwork/bullmq-engine batch/public-batch-store.ts).
 */
if (process.env['BT_HALT_AFTER_COMMIT'] === '1') {
  const halt = (queue: string, token: string, jobIds: readonly string[]): Promise<void> => {
    process.stdout.write(`${JSON.stringify({ msg: 'bt: halted after commit', queue, batch: token, jobs: jobIds.length })}\n`);
    return new Promise<void>(() => undefined);
  };
  Reflect.set(globalThis, Symbol.for('tickwork.test.publicBatchStore.afterCommit'), halt);
}
