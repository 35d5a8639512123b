/**
 * `pnpm bench:recovery`'s catalog, loaded by the stock worker through JOBS_MODULE: one job whose run records
 * a step every `stepMs` (200 ms) for `steps` steps (15: about 3 s), then a last `done` step. Each step is a
 * `ctx.redisStep` whose effect (a line in `rk:effects`: run, step, pid, the worker's clock) commits with
 * the step's record, so an effect seen twice is a doubled effect, never a crash between effect and record.
 * The step's work (its wait) is inside the step, so a resumed run's recorded steps replay at once and the
 * first step it had not recorded runs next. Idempotent because: each effect is fenced by the run's lease.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { createCatalog, defineJob } from '@tickwork/core';
import { z } from 'zod';

export const RK_QUEUE = 'rk';

export const RK_KEYS = {
  /** `<run>|<pid>`: one line per delivery that started the handler (a claimed-first redelivery starts it only once it holds the run). */
  starts: 'rk:starts',
  /** `<run>|<step or done>|<pid>|<ms>`: one line per committed step. */
  effects: 'rk:effects',
};

export const DONE_STEP = 'done';

export const stepsJob = defineJob({
  name: 'rk.steps',
  queue: RK_QUEUE,
  schema: z.object({ run: z.string(), steps: z.number().int().positive(), stepMs: z.number().int().nonnegative() }),
  async handler(ctx) {
    const { run, steps, stepMs } = ctx.data;
    await ctx.redis.rpush(RK_KEYS.starts, `${run}|${process.pid}`);
    for (let i = 0; i < steps; i++) {
      await ctx.redisStep(`s${i}`, async (tx) => {
        await sleep(stepMs);
        tx.rpush(RK_KEYS.effects, `${run}|${i}|${process.pid}|${Date.now()}`);
      });
    }
    return ctx.redisStep(DONE_STEP, (tx) => {
      tx.rpush(RK_KEYS.effects, `${run}|${DONE_STEP}|${process.pid}|${Date.now()}`);
      return DONE_STEP;
    });
  },
});

export const catalog = createCatalog([stepsJob]);
