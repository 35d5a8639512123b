/**
 * The soak's catalog (loaded by the stock worker through JOBS_MODULE): two no-op jobs, one per place a run's
 * record can live. Idempotent because: they do nothing.
 */
import { createCatalog, defineJob } from '@tickwork/core';
import { z } from 'zod';

/** Named by the job id BullMQ generates: its record lives in the job's own hash. */
export const soakNoop = defineJob({ name: 'soak.noop', queue: 'soak', schema: z.object({ i: z.number() }), handler: async () => null });

/**
 * The keyed job's window: 2 minutes, so its slots (a twelfth: 10 s) fill within the soak; a compacted run
 * costs the same whatever the window (soak-keyed.ts).
 */
export const SOAK_KEYED_WINDOW_MS = 120_000;

/** Keyed by `idempotencyKey`: its record lives under its own key for its window, whole and then compacted. */
export const soakKeyed = defineJob({
  name: 'soak.keyed',
  queue: 'soak',
  schema: z.object({ i: z.number(), round: z.string() }),
  idempotencyKey: (data) => `${data.round}:${data.i}`,
  idempotencyWindow: { milliseconds: SOAK_KEYED_WINDOW_MS },
  handler: async () => null,
});

export const catalog = createCatalog([soakNoop, soakKeyed]);
