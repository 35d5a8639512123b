/**
 * Test-only catalog (loaded by real worker processes through JOBS_MODULE) for the exactly-once tests.
 * Not part of the production catalog. Side effects go to Redis lists under `fx:` so tests can count them.
 */
import { createCatalog, defineJob, type OverlapPolicy } from '@tickwork/runtime';
import { z } from 'zod';

export const FX_KEYS = {
  /** List of effects per occurrence: one entry per time the handler's effect ran. */
  effects: (occurrence: string) => `fx:effects:${occurrence}`,
  /** List of JSON {key, start, end} per overlap schedule. */
  runs: (schedule: string) => `fx:runs:${schedule}`,
};

/** Deliberately not using ctx.step: the ledger alone must keep the effect single. */
export const fxEffect = defineJob({
  name: 'fx.effect',
  queue: 'fx',
  schema: z.object({ occurrence: z.string(), sleepMs: z.number().int().min(0).default(0) }),
  idempotencyKey: (data) => data.occurrence,
  async handler(ctx) {
    if (ctx.data.sleepMs > 0) await new Promise((r) => setTimeout(r, ctx.data.sleepMs));
    const n = await ctx.redis.rpush(FX_KEYS.effects(ctx.data.occurrence), `${process.pid}:${ctx.jobId}`);
    return { effects: n, key: ctx.idempotencyKey };
  },
});

/** The same effect, keyed by job id (no idempotencyKey function). */
export const fxEffectById = defineJob({
  name: 'fx.effect-by-id',
  queue: 'fx',
  schema: z.object({ occurrence: z.string() }),
  async handler(ctx) {
    await ctx.redis.rpush(FX_KEYS.effects(ctx.data.occurrence), ctx.idempotencyKey);
    return { key: ctx.idempotencyKey };
  },
});

const overlapJob = (policy: OverlapPolicy) =>
  defineJob({
    name: `fx.overlap-${policy}`,
    queue: 'fxoverlap',
    schema: z.object({}),
    schedule: { every: { seconds: 1 }, tz: 'UTC', overlap: policy },
    async handler(ctx) {
      const start = Date.now();
      await new Promise((r) => setTimeout(r, 3000));
      await ctx.redis.rpush(
        FX_KEYS.runs(ctx.jobName),
        JSON.stringify({ key: ctx.idempotencyKey, nominal: ctx.nominalTime?.getTime(), start, end: Date.now() }),
      );
      return { start };
    },
  });

export const catalog = createCatalog([
  fxEffect,
  fxEffectById,
  overlapJob('skip'),
  overlapJob('buffer-one'),
  overlapJob('allow'),
]);
