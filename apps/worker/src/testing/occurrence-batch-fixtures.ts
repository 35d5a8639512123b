/**
 * Test-only catalog (loaded in process and by real worker and scheduler processes through JOBS_MODULE) for
 * batches of occurrences (pipeline/occurrence-batch.ts). Not part of the production catalog. Each run's
 * effect goes through `ctx.redisStep`, so a test counts effects (once each) apart from handler starts.
 */
import { createCatalog, defineJob, UnrecoverableError } from '@tickwork/core';
import { z } from 'zod';

export const BATCH_FX = {
  /** List of `<jobId> <attempt>`, one per handler start. */
  starts: 'fx:batch:starts',
  /** Hash: occurrence job id → how many times its effect ran. */
  effects: 'fx:batch:effects',
};

export const fxBatched = defineJob({
  name: 'fx.batched',
  queue: 'fxbatch',
  schema: z.object({
    /** `once`: fails its first attempt; `always`: every attempt; `unrecoverable`: fails for good at once. */
    fail: z.enum(['once', 'always', 'unrecoverable']).optional(),
    /** Sleeps this long before its effect (a crash test kills the worker meanwhile). */
    sleepMs: z.number().int().min(0).default(0),
  }),
  retry: { attempts: 2, backoff: { type: 'fixed', delayMs: 100 } },
  async handler(ctx) {
    await ctx.redis.rpush(BATCH_FX.starts, `${ctx.jobId} ${ctx.attempt}`);
    const { fail, sleepMs } = ctx.data;
    if (fail === 'unrecoverable') throw new UnrecoverableError('refused for good');
    if (fail === 'always' || (fail === 'once' && ctx.attempt === 1)) throw new Error(`failed attempt ${ctx.attempt}`);
    if (sleepMs > 0) await new Promise((r) => setTimeout(r, sleepMs));
    await ctx.redisStep('effect', (tx) => tx.call('HINCRBY', BATCH_FX.effects, ctx.jobId, 1));
    return { ran: ctx.jobId };
  },
});

export const catalog = createCatalog([fxBatched]);
