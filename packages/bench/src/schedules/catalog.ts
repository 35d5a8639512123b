/**
 * The schedules bench's catalog, loaded by the stock scheduler and the stock worker through JOBS_MODULE
 * (as soak-catalog.ts is): one no-op job that runtime schedules point at. Its handler records how late it
 * started against the occurrence's nominal time (lag-recorder.ts) and does nothing else, so what the bench
 * measures is the platform. Idempotent because: it does nothing.
 */
import { createCatalog, defineJob } from '@tickwork/core';
import { z } from 'zod';
import { recordLag, serve } from './lag-recorder.js';

export const benchTick = defineJob({
  name: 'bench.tick',
  queue: 'sched',
  // The same small payload BullMQ's job schedulers carry in the same run (bullmq-side.ts).
  schema: z.object({ i: z.number() }),
  handler: async (ctx) => {
    if (ctx.nominalTime) recordLag(ctx.nominalTime.getTime(), ctx.data.i);
    return null;
  },
});

/** Backlog for the scheduled-lane bench (lane.ts): a no-op on the same queue as the schedules' job. */
export const benchNoop = defineJob({ name: 'bench.noop', queue: 'sched', schema: z.object({}), handler: async () => null });

export const catalog = createCatalog([benchTick, benchNoop]);

serve();
