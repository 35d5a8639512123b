import { createCatalog, createEnqueue, defineJob, type QueueSet } from '@tickwork/core';
import { listDeadLetters, redriveDeadLetters } from '@tickwork/operations';
import { waitFor } from '@tickwork/testkit';
import type { Redis } from 'ioredis';
import { afterAll, beforeAll, expect, it, vi } from 'vitest';
import { z } from 'zod';
import { startPoolFixture, type PoolFixture } from './testing/pool-fixture.js';

vi.setConfig({ testTimeout: 60_000, hookTimeout: 60_000 });

const Q = 'step-keys';
const BROKEN = 'test:step-keys:broken';
/** One line per call of a step's function: `<attempt or re-drive>|<step id>|<the key it got>`. */
const CALLS = 'test:step-keys:calls';

/** Two steps; the second fails while BROKEN is set, so the run is retried, dead-lettered and re-driven. */
const twoSteps = defineJob({
  name: 't.two-steps',
  queue: Q,
  schema: z.object({ order: z.string() }),
  idempotencyKey: (data) => data.order,
  retry: { attempts: 2, backoff: { type: 'fixed', delayMs: 10 } },
  async handler(ctx) {
    const call = (s: { id: string; key: string }) => ctx.redis.rpush(CALLS, `${ctx.jobId}/${ctx.attempt}|${s.id}|${s.key}`);
    await ctx.step('reserve', async (s) => {
      await call(s);
      return 'reserved';
    });
    await ctx.step('charge', async (s) => {
      await call(s);
      if (await ctx.redis.get(BROKEN)) throw new Error('payment provider down');
      return 'charged';
    });
    // The form without the argument keeps working.
    return ctx.step('done', () => Promise.resolve(ctx.idempotencyKey));
  },
});
const catalog = createCatalog([twoSteps]);

let fx: PoolFixture;
let redis: Redis;
let queues: QueueSet;

beforeAll(async () => {
  fx = await startPoolFixture(catalog, [Q]);
  ({ redis, queues } = fx);
});

afterAll(() => fx?.stop());

it("each step's key is <run key>/step/<id>: the same across a retry and a re-drive, distinct per step", async () => {
  await redis.set(BROKEN, '1');
  await createEnqueue(catalog, queues)(twoSteps, { order: 'o-1' }, { jobId: 'order-1' });
  const dead = await waitFor(async () => (await listDeadLetters(queues, Q)).find((d) => d.entry.originalJobId === 'order-1'), {
    timeoutMs: 20_000,
    what: 'order-1 dead-lettered after its two attempts',
  });
  await redis.del(BROKEN);
  const [redriven] = await redriveDeadLetters({ queues, queue: Q, selector: { ids: [dead.dlqJobId] }, catalog });
  await waitFor(async () => (await (await queues.get(Q).getJob(redriven?.newJobId ?? ''))?.getState()) === 'completed', {
    what: 'the re-driven run completed',
  });

  const runKey = 't.two-steps@o-1';
  const calls = (await redis.lrange(CALLS, 0, -1)).map((c) => c.split('|'));
  // The recorded step ran once; the failing one ran on each attempt and once more after the re-drive.
  expect(calls).toEqual([
    ['order-1/1', 'reserve', `${runKey}/step/reserve`],
    ['order-1/1', 'charge', `${runKey}/step/charge`],
    ['order-1/2', 'charge', `${runKey}/step/charge`],
    [`${redriven?.newJobId}/1`, 'charge', `${runKey}/step/charge`],
  ]);
  expect((await queues.get(Q).getJob(redriven?.newJobId ?? ''))?.returnvalue).toBe(runKey);
});
