/**
 * Test-only catalog (loaded by a real worker process through JOBS_MODULE) for which runs count in a
 * schedule's history: one scheduled job that fails when its data says so. Not part of the production catalog.
 */
import { createCatalog, defineJob } from '@tickwork/core';
import { z } from 'zod';

/** The ids of the runs the handler saw, in order. */
export const ADHOC_RUNS = 'fx:adhoc-runs';

/**
 * Scheduled once a year (on 1 January; no scheduler runs in the test anyway), so every run of the test is
 * either an ad-hoc enqueue or a run now of the schedule. One attempt: a failure is final at once.
 * Idempotent because: its only effect is a list entry, for the test to read.
 */
export const fxReport = defineJob({
  name: 'fx.report',
  queue: 'fxadhoc',
  schema: z.object({ fail: z.boolean() }),
  retry: { attempts: 1 },
  schedule: { pattern: '0 3 1 1 *', tz: 'UTC', data: { fail: false } },
  async handler(ctx) {
    await ctx.redis.rpush(ADHOC_RUNS, ctx.jobId);
    if (ctx.data.fail) throw new Error('the ad-hoc run failed');
  },
});

export const catalog = createCatalog([fxReport]);
