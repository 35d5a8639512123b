/**
 * Test-only catalog (loaded by real worker processes through JOBS_MODULE) for the tests of the worker on
 * BullMQ's public paths (public-path.test.ts). It reuses the cancel and exactly-once fixtures' jobs as they
 * are, and adds a job that always fails and two that a kill -9 can cut between steps. Effects go to a
 * Redis list under `pp:` so tests can see what ran, and in which process.
 */
import { createCatalog, defineJob } from '@tickwork/core';
import { z } from 'zod';
import { cxWait } from './cancel-fixtures.js';
import { fxEffect } from './exactly-once-fixtures.js';

export const PP_KEYS = {
  /** `<event>:<job id>:<pid>` per thing a handler did: started, first (its first step ran), completed. */
  events: 'pp:events',
  /** When set, a run of `pp.resume` goes on past its first step instead of waiting there. */
  release: 'pp:release',
};

/** Fails on every attempt, with the same reason: a poison job, for the dead-letter queue. */
export const ppPoison = defineJob({
  name: 'pp.poison',
  queue: 'pp',
  schema: z.object({ n: z.number().int() }),
  retry: { attempts: 3, backoff: { type: 'fixed', delayMs: 20 } },
  handler: async () => {
    throw new Error('poison pill');
  },
});

/**
 * Records its first step, then waits (until its signal aborts, which a kill -9 never sends) unless
 * `pp:release` is set, in which case it completes. A process killed while it waits leaves the step recorded
 * and the run unfinished: the run's next delivery must skip the step and complete.
 * Idempotent because: its only effect is a step, recorded under the run's key.
 * On a queue of its own, so a test can choose the processes that serve it.
 */
export const ppResume = defineJob({
  name: 'pp.resume',
  queue: 'ppresume',
  schema: z.object({ n: z.number().int() }),
  retry: { attempts: 3, backoff: { type: 'fixed', delayMs: 100 } },
  async handler(ctx) {
    const event = (what: string) => ctx.redis.rpush(PP_KEYS.events, `${what}:${ctx.jobId}:${process.pid}`);
    await event('started');
    await ctx.step('first', () => event('first'));
    if (!(await ctx.redis.get(PP_KEYS.release))) {
      const signal = ctx.signal;
      await new Promise<void>((resolve) => (signal.aborted ? resolve() : signal.addEventListener('abort', () => resolve(), { once: true })));
      throw signal.reason;
    }
    await event('completed');
    return { completedBy: process.pid };
  },
});

/**
 * Records `steps` steps, pausing `pauseMs` after each (the window a kill lands in): a run killed again and
 * again moves forward by a few steps with each delivery. Each step's effect is `step:s<i>:<pid>`.
 * Idempotent because: its only effects are steps, recorded under the run's key.
 * On a queue of its own, so a test can choose the processes that serve it.
 */
export const ppProgress = defineJob({
  name: 'pp.progress',
  queue: 'ppprogress',
  schema: z.object({ steps: z.number().int().min(1), pauseMs: z.number().int().min(0) }),
  retry: { attempts: 3, backoff: { type: 'fixed', delayMs: 100 } },
  async handler(ctx) {
    for (let i = 0; i < ctx.data.steps; i++) {
      await ctx.step(`s${i}`, () => ctx.redis.rpush(PP_KEYS.events, `step:s${i}:${process.pid}`));
      await new Promise((r) => setTimeout(r, ctx.data.pauseMs));
    }
    return { steps: ctx.data.steps };
  },
});

/**
 * Records its first step, then waits until its signal aborts (a kill -9 never sends it): every delivery
 * after the first replays the step and waits, so a run whose worker keeps being killed makes no progress.
 * Idempotent because: its only effect is a step, recorded under the run's key.
 * On a queue of its own, so no other test's workers (or release) reach it.
 */
export const ppStuck = defineJob({
  name: 'pp.stuck',
  queue: 'ppstuck',
  schema: z.object({ n: z.number().int() }),
  retry: { attempts: 3, backoff: { type: 'fixed', delayMs: 100 } },
  async handler(ctx) {
    await ctx.redis.rpush(PP_KEYS.events, `started:${ctx.jobId}:${process.pid}`);
    await ctx.step('first', () => ctx.redis.rpush(PP_KEYS.events, `first:${ctx.jobId}:${process.pid}`));
    const signal = ctx.signal;
    await new Promise<void>((resolve) => (signal.aborted ? resolve() : signal.addEventListener('abort', () => resolve(), { once: true })));
    throw signal.reason;
  },
});

export const catalog = createCatalog([cxWait, fxEffect, ppPoison, ppResume, ppProgress, ppStuck]);
