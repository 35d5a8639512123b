/**
 * Test-only catalog (loaded by real worker processes through JOBS_MODULE) for the exactly-once tests.
 * Not part of the production catalog. Side effects go to Redis lists under `fx:` so tests can count them.
 */
import { createCatalog, defineJob, type JobContext, type OverlapPolicy } from '@tickwork/core';
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

/** Sleeps 3 s and records its run under its schedule's id (the idempotency key's part before the last '@'). */
async function overlapHandler(ctx: JobContext<Record<string, never>>): Promise<{ start: number }> {
  const start = Date.now();
  await new Promise((r) => setTimeout(r, 3000));
  const schedule = ctx.idempotencyKey.slice(0, ctx.idempotencyKey.lastIndexOf('@'));
  await ctx.redis.rpush(FX_KEYS.runs(schedule), JSON.stringify({ key: ctx.idempotencyKey, nominal: ctx.nominalTime?.getTime(), start, end: Date.now() }));
  return { start };
}

const overlapJob = (policy: OverlapPolicy) =>
  defineJob({
    name: `fx.overlap-${policy}`,
    queue: 'fxoverlap',
    schema: z.object({}),
    schedule: { every: { seconds: 1 }, tz: 'UTC', overlap: policy },
    handler: overlapHandler,
  });

/** The same handler without a schedule of its own: runtime schedules (`rt:overlap-<policy>`) fire it. */
export const fxOverlapRuntime = defineJob({ name: 'fx.overlap-runtime', queue: 'fxoverlap', schema: z.object({}), handler: overlapHandler });

export const catalog = createCatalog([
  fxEffect,
  fxEffectById,
  overlapJob('skip'),
  overlapJob('buffer-one'),
  overlapJob('allow'),
  fxOverlapRuntime,
]);
