/**
 * Test-only catalog (loaded by real scheduler and worker processes through JOBS_MODULE) for the head start
 * of on-time occurrences: one job, run by a runtime schedule or added by hand with an occurrence option.
 * Not part of the production catalog.
 */
import { createCatalog, defineJob } from '@tickwork/core';
import { z } from 'zod';

/** List of JSON `{ jobId, nominal, startedAt }`, one per handler run (ms since the epoch). */
export const ON_TIME_RUNS = 'fx:on-time:runs';

export const fxOnTime = defineJob({
  name: 'fx.on-time',
  queue: 'fxontime',
  schema: z.object({}),
  async handler(ctx) {
    const startedAt = Date.now();
    await ctx.redis.rpush(ON_TIME_RUNS, JSON.stringify({ jobId: ctx.jobId, nominal: ctx.nominalTime?.getTime(), startedAt }));
  },
});

export const catalog = createCatalog([fxOnTime]);
