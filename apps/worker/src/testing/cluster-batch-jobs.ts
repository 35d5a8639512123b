/**
 * Test-only catalog of batch jobs for Redis Cluster (loaded by a real worker process through JOBS_MODULE):
 * one whose writes carry its queue's hash tag, one whose write does not (Redis Cluster cannot commit it
 * with the batch, so its batches fail).
 */
import { createCatalog, defineBatchJob } from '@tickwork/core';
import { z } from 'zod';

/** The tagged key the `sigma` batches add to: on the queue's slot. */
export const SIGMA_TOTAL = 'app:{sigma}:total';
/** A key on no queue's slot. */
export const UNTAGGED_TOTAL = 'app:total';

const schema = z.object({ n: z.number().int() });

/** Idempotent because: its write is committed with the batch, fenced by the batch's lease. */
export const sigma = defineBatchJob({
  name: 'cl.sigma',
  queue: 'sigma',
  schema,
  batch: { size: 50, handler: async (ctx) => void ctx.tx.incrby(SIGMA_TOTAL, ctx.jobs.reduce((sum, j) => sum + j.data.n, 0)) },
});

/** Idempotent because: as sigma; its write is refused on a cluster, so it never commits. */
export const untagged = defineBatchJob({
  name: 'cl.untagged',
  queue: 'omega',
  schema,
  retry: { attempts: 1 },
  batch: { size: 50, handler: async (ctx) => void ctx.tx.incrby(UNTAGGED_TOTAL, ctx.jobs.length) },
});

export const catalog = createCatalog([sigma, untagged]);
