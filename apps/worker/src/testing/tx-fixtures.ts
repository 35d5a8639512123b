/**
 * Test-only catalog (loaded by real worker processes through JOBS_MODULE) for the Redis-step crash tests.
 * `tx.bill` charges `customers` customers, each charge a Redis step whose function records the charge and
 * then pauses before returning: a worker killed in that pause leaves neither the charge nor its record.
 */
import { createCatalog, defineJob } from '@tickwork/core';
import { z } from 'zod';

/** Hash per run: customer -> times charged. */
export const chargesKey = (run: string) => `tx:charges:${run}`;

/** Idempotent because: each charge is a Redis step, committed with its record (the property under test). */
export const txBill = defineJob({
  name: 'tx.bill',
  queue: 'tx',
  schema: z.object({ run: z.string(), customers: z.number().int().min(1), pauseMs: z.number().int().min(0) }),
  idempotencyKey: (data) => data.run,
  // Redis may be down for a few seconds in the crash tests: keep retrying instead of dead-lettering.
  retry: { attempts: 50, backoff: { type: 'fixed', delayMs: 200 } },
  async handler(ctx) {
    for (let i = 0; i < ctx.data.customers; i++) {
      await ctx.redisStep(`charge:${i}`, async (tx) => {
        tx.hincrby(chargesKey(ctx.data.run), `c${i}`, 1);
        // The window between the effect and its record, made wide on purpose.
        await new Promise((r) => setTimeout(r, Math.floor(Math.random() * (ctx.data.pauseMs + 1))));
        return i;
      });
    }
    return { charged: ctx.data.customers };
  },
});

/** Hash per `tx.gated` run: customer -> times charged. With the queue's hash tag, so it runs on a Redis Cluster too. */
export const gatedChargesKey = (run: string) => `tx:{tx}:charges:${run}`;

/** The gate `tx.gated` runs wait at: its value is how many of their pauses are open. */
export const TX_GATE = 'tx:gate';

/**
 * `tx.gated` charges like `tx.bill`, and after the number of customers in each entry of `pauseAfter` waits
 * until TX_GATE reaches that pause's number (1, 2, ...): a test knows where every run stands (its charges)
 * when it snapshots or restarts Redis. The gate's reads retry through an outage.
 */
export const txGated = defineJob({
  name: 'tx.gated',
  queue: 'tx',
  schema: z.object({ run: z.string(), customers: z.number().int().min(1), pauseAfter: z.array(z.number().int().min(1)) }),
  idempotencyKey: (data) => data.run,
  async handler(ctx) {
    for (let i = 0; i < ctx.data.customers; i++) {
      await ctx.redisStep(`charge:${i}`, (tx) => {
        tx.hincrby(gatedChargesKey(ctx.data.run), `c${i}`, 1);
        return i;
      });
      const pause = ctx.data.pauseAfter.indexOf(i + 1) + 1;
      if (pause === 0) continue;
      while (Number(await ctx.redis.get(TX_GATE).catch(() => null)) < pause) {
        ctx.signal.throwIfAborted();
        await new Promise((r) => setTimeout(r, 20));
      }
    }
    return { charged: ctx.data.customers };
  },
});

export const catalog = createCatalog([txBill, txGated]);
