/**
 * Test-only catalog (built to dist/testing so scheduler and worker child processes can load it through
 * JOBS_MODULE). Not part of the production catalog.
 */
import { createCatalog, defineJob } from '@tickwork/core';
import { z } from 'zod';

/** List of JSON `{ key, catchUp, nominal }`, one per handler run. */
export const FX_RUNS_KEY = 'fx:runs';

export const fxSecond = defineJob({
  name: 'fx.second',
  queue: 'fx',
  schema: z.object({}),
  // overlap 'allow': these tests kill workers mid-run, and under the default 'skip' the dead run's overlap
  // slot (held until its lease expires) would skip the very occurrences the tests wait for.
  schedule: { pattern: '* * * * * *', tz: 'UTC', missed: 'once', catchUpWindow: { minutes: 5 }, overlap: 'allow' },
  async handler(ctx) {
    await ctx.redis.rpush(
      FX_RUNS_KEY,
      JSON.stringify({ key: ctx.idempotencyKey, catchUp: ctx.isCatchUp, nominal: ctx.nominalTime?.toISOString() ?? null }),
    );
  },
});

/** Hash occurrence key -> how many times its handler ran (runtime schedules of the process tests). */
export const FX_TENANT_RUNS_KEY = 'fx:tenant-runs';

/** A job without a schedule: runtime schedules (one per tenant) are upserted for it through the API. */
export const fxTenant = defineJob({
  name: 'fx.tenant',
  queue: 'fxt',
  schema: z.object({ tenant: z.string() }),
  async handler(ctx) {
    await ctx.redis.hincrby(FX_TENANT_RUNS_KEY, ctx.idempotencyKey, 1);
  },
});

export const catalog = createCatalog([fxSecond, fxTenant]);
