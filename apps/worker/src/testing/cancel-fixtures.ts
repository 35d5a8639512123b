/**
 * Test-only catalog (loaded by real worker processes through JOBS_MODULE) for the cancel tests. Effects go
 * to Redis lists under `cx:` so tests can see what ran.
 */
import { createCatalog, defineJob } from '@tickwork/core';
import { z } from 'zod';

export const CX_KEYS = {
  /** `<event>:<job id>[:<detail>]` per thing a handler did: started, step, aborted, completed. */
  events: 'cx:events',
  /** When set, a run completes at once instead of waiting (for the retry after a cancel). */
  finish: 'cx:finish',
};

const schema = z.object({ n: z.number().int() });

/**
 * Records a step, then waits until its signal aborts (an operator's cancel) and ends with the signal's
 * reason, as a handler that honours ctx.signal does; with `cx:finish` set it completes instead.
 * Idempotent because: its only effect is a step, recorded under the run's key.
 * Scheduled (hourly, never run by a scheduler in these tests), so its runs now (runNow) keep occurrence history.
 */
export const cxWait = defineJob({
  name: 'cx.wait',
  queue: 'cx',
  schema,
  retry: { attempts: 3, backoff: { type: 'fixed', delayMs: 100 } },
  schedule: { every: { hours: 1 }, tz: 'UTC', data: { n: 0 } },
  async handler(ctx) {
    await ctx.redis.rpush(CX_KEYS.events, `started:${ctx.jobId}`);
    await ctx.step('first', () => ctx.redis.rpush(CX_KEYS.events, `step:${ctx.jobId}`));
    if (await ctx.redis.get(CX_KEYS.finish)) {
      await ctx.redis.rpush(CX_KEYS.events, `completed:${ctx.jobId}`);
      return { done: ctx.data.n };
    }
    const signal = ctx.signal;
    await new Promise<void>((resolve) => (signal.aborted ? resolve() : signal.addEventListener('abort', () => resolve(), { once: true })));
    await ctx.redis.rpush(CX_KEYS.events, `aborted:${ctx.jobId}:${String(signal.reason)}`);
    throw signal.reason;
  },
});

export const catalog = createCatalog([cxWait]);
