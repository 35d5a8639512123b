/**
 * The soak's catalog (loaded by the stock worker through JOBS_MODULE): two no-op jobs, one per place a run's
 * record can live. Idempotent because: they do nothing.
 */
import { createCatalog, defineJob } from '@tickwork/core';
import { z } from 'zod';

/** Named by the job id BullMQ generates: its record lives in the job's own hash. */
export const soakNoop = defineJob({ name: 'soak.noop', queue: 'soak', schema: z.object({ i: z.number() }), handler: async () => null });

/** Keyed by `idempotencyKey`: its record lives under its own key for the default window (24 hours). */
export const soakKeyed = defineJob({
  name: 'soak.keyed',
  queue: 'soak',
  schema: z.object({ i: z.number(), round: z.string() }),
  idempotencyKey: (data) => `${data.round}:${data.i}`,
  handler: async () => null,
});

export const catalog = createCatalog([soakNoop, soakKeyed]);
