/**
 * Fixture catalog for the conservation test (not part of the production catalog): run by real worker
 * processes through JOBS_MODULE=dist/testing/conservation-jobs.js.
 */
import { createCatalog, defineJob } from '@tickwork/core';
import { z } from 'zod';

export const CONSERVATION_QUEUE = 'cons';

const good = defineJob({
  name: 'c.good',
  queue: CONSERVATION_QUEUE,
  schema: z.object({ i: z.number().int() }),
  retry: { attempts: 3, backoff: { type: 'fixed', delayMs: 10 } },
  handler: async (ctx) => ({ i: ctx.data.i }),
});

/** Fails its first attempt, succeeds on the second (the try count lives in Redis, across processes). */
const flaky = defineJob({
  name: 'c.flaky',
  queue: CONSERVATION_QUEUE,
  schema: z.object({ i: z.number().int() }),
  retry: { attempts: 3, backoff: { type: 'fixed', delayMs: 10 } },
  async handler(ctx) {
    const tries = await ctx.redis.incr(`cons:tries:${ctx.jobId}`);
    if (tries < 2) throw new Error(`flaky ${ctx.data.i}: transient`);
    return { i: ctx.data.i, tries };
  },
});

const poison = defineJob({
  name: 'c.poison',
  queue: CONSERVATION_QUEUE,
  schema: z.object({ i: z.number().int() }),
  retry: { attempts: 2, backoff: { type: 'fixed', delayMs: 10 } },
  async handler(ctx) {
    throw new Error(`poison ${ctx.data.i}`);
  },
});

export const catalog = createCatalog([good, flaky, poison]);
