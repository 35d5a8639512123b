import { defineJob, type JobContext } from '@tickwork/core';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { JobTimeoutError } from './errors.js';
import { runHandler } from './run-handler.js';

const never = { onAbort: () => () => {} };
const contextWith = (signalOf: () => AbortSignal) => ({ get signal() { return signalOf(); } }) as unknown as JobContext<unknown>;

describe('runHandler timeouts (one timer per distinct timeout)', () => {
  it('times out hanging attempts in order, after others with the same timeout settled before and between them', async () => {
    const signals: AbortSignal[] = [];
    const hang = defineJob({
      name: 'rh.hang',
      queue: 'rh',
      schema: z.object({}),
      timeoutMs: 60,
      handler: async (ctx) => {
        signals.push(ctx.signal);
        return new Promise(() => {});
      },
    });
    const quick = defineJob({ name: 'rh.quick', queue: 'rh', schema: z.object({}), timeoutMs: 60, handler: async () => 'done' });
    expect(await runHandler(quick, contextWith, never)).toBe('done');
    const started = Date.now();
    const first = runHandler(hang, contextWith, never);
    const between = await runHandler(quick, contextWith, never);
    const second = runHandler(hang, contextWith, never);
    const settled = await Promise.allSettled([first, second]);
    expect(between).toBe('done');
    for (const s of settled) expect(s.status === 'rejected' && s.reason instanceof JobTimeoutError).toBe(true);
    expect(Date.now() - started).toBeGreaterThanOrEqual(55);
    expect(signals.map((s) => s.aborted)).toEqual([true, true]);
    // A timeout of another length has a list of its own, and a long one does not hold a short one up.
    const long = runHandler({ ...hang, timeoutMs: 5_000 }, contextWith, never);
    await expect(runHandler(hang, contextWith, never)).rejects.toBeInstanceOf(JobTimeoutError);
    const race = await Promise.race([long.then(() => 'long settled', () => 'long settled'), Promise.resolve('long still running')]);
    expect(race).toBe('long still running');
  });
});
