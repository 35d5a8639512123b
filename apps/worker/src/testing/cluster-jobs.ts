/**
 * Fixture catalog for the Redis Cluster tests (not part of the production catalog): run by real worker
 * processes through JOBS_MODULE=dist/testing/cluster-jobs.js. The queue names hash (with their tags
 * `{alpha}`, `{delta}`) to slots 865 and 9053: served by different masters of a 3-master cluster.
 */
import { createCatalog, defineJob } from '@tickwork/core';
import { z } from 'zod';

export const CLUSTER_QUEUES = ['alpha', 'delta'] as const;

/** A run named by its generated job id: its record lives in its BullMQ job's hash. */
export const plain = defineJob({
  name: 'cl.plain',
  queue: 'alpha',
  schema: z.object({ i: z.number().int() }),
  handler: async (ctx) => ({ i: ctx.data.i }),
});

/** A run with a key of its own and a recorded step: a ledger record and step results under its queue's tag. */
export const keyed = defineJob({
  name: 'cl.keyed',
  queue: 'delta',
  schema: z.object({ i: z.number().int() }),
  idempotencyKey: (d) => `k-${d.i}`,
  async handler(ctx) {
    const doubled = await ctx.step('double', async () => ctx.data.i * 2);
    return { i: ctx.data.i, doubled };
  },
});

/** Fails at once, for good: dead-lettered to `delta.dlq`. */
export const poison = defineJob({
  name: 'cl.poison',
  queue: 'delta',
  schema: z.object({ i: z.number().int() }),
  retry: { attempts: 1 },
  async handler(ctx) {
    throw new Error(`poison ${ctx.data.i}`);
  },
});

/** Hash i -> how many times job i's effect was committed (a Redis step: exactly once, on alpha's slot). */
export const EFFECTS_KEY = 'cl:{alpha}:effects';

/** An exactly-once effect per job, on queue alpha: the failover test counts them. */
export const counted = defineJob({
  name: 'cl.counted',
  queue: 'alpha',
  schema: z.object({ i: z.number().int() }),
  retry: { attempts: 5, backoff: { type: 'fixed', delayMs: 200 } },
  async handler(ctx) {
    await ctx.redisStep('count', (tx) => tx.hincrby(EFFECTS_KEY, String(ctx.data.i), 1));
    return { i: ctx.data.i };
  },
});

/** Where `gated` tells how far it got, and the gate it waits at: keys on delta's slot (isolation.test.ts). */
export const GATED_STATE_KEY = 'cl:{delta}:gated';
export const GATE_KEY = 'cl:{delta}:gate';

/**
 * A run on alpha that waits at a gate (GATE_KEY set) between two steps, so a test can stop alpha's master
 * while it runs: the first step has claimed the run (its record and claim are written as the turn ends),
 * and the second step's record then waits on that master. Its state (GATED_STATE_KEY): `waiting` at the
 * gate, `claiming` once past it, `done` once the second step returned.
 */
export const gated = defineJob({
  name: 'cl.gated',
  queue: 'alpha',
  schema: z.object({}),
  async handler(ctx) {
    await ctx.step('before-gate', async () => true);
    await ctx.redis.set(GATED_STATE_KEY, 'waiting');
    while ((await ctx.redis.get(GATE_KEY)) === null) {
      ctx.signal.throwIfAborted();
      await new Promise((r) => setTimeout(r, 20));
    }
    await ctx.redis.set(GATED_STATE_KEY, 'claiming');
    const stepped = await ctx.step('after-gate', async () => true);
    await ctx.redis.set(GATED_STATE_KEY, 'done');
    return { stepped };
  },
});

export const catalog = createCatalog([plain, keyed, poison, counted, gated]);
