/**
 * The takeover bench's catalog, loaded by the stock scheduler and worker through JOBS_MODULE: one job that
 * runtime schedules point at, with the default policies (missed 'skip', overlap 'skip'), whose handler takes
 * BENCH_TAKEOVER_JOB_MS (100 ms): long enough that occurrences of one schedule added at once run side by
 * side and the overlap policy skips all but one, as it would for a real job. Idempotent because: it only waits.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { createCatalog, defineJob } from '@tickwork/core';
import { z } from 'zod';

const jobMs = Number(process.env.BENCH_TAKEOVER_JOB_MS ?? 100);

export const takeoverJob = defineJob({
  name: 'bench.takeover',
  queue: 'takeover',
  schema: z.object({ i: z.number() }),
  handler: async () => {
    await sleep(jobMs);
    return null;
  },
});

export const catalog = createCatalog([takeoverJob]);
