/**
 * Test-only catalog (loaded by real scheduler and worker processes through JOBS_MODULE) for the missed-run
 * policy at the worker: one every-second schedule per policy. Not part of the production catalog.
 */
import { createCatalog, defineJob, type MissedPolicy, type ScheduleSpec } from '@tickwork/core';
import { z } from 'zod';

/** List of JSON `{ key, nominal, catchUp }` per schedule, one per handler run. */
export const lateRunsKey = (schedule: string) => `fx:late-runs:${schedule}`;

const lateJob = (missed: MissedPolicy, extra: Partial<ScheduleSpec> = {}) =>
  defineJob({
    name: `fx.late-${missed}`,
    queue: 'fxlate',
    schema: z.object({}),
    schedule: { every: { seconds: 1 }, tz: 'UTC', missed, overlap: 'allow', ...extra } as ScheduleSpec,
    async handler(ctx) {
      await ctx.redis.rpush(
        lateRunsKey(ctx.jobName),
        JSON.stringify({ key: ctx.idempotencyKey, nominal: ctx.nominalTime?.toISOString(), catchUp: ctx.isCatchUp }),
      );
    },
  });

export const catalog = createCatalog([lateJob('skip'), lateJob('once'), lateJob('all', { maxCatchUp: 2 })]);
