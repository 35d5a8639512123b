/**
 * The catalog of `pnpm bench:schedule-pages`'s job load, loaded by the stock worker and the dashboard through
 * JOBS_MODULE: the demo catalog (whose jobs the runtime schedules and the catalog schedule's page name) plus
 * one no-op job on the demo's `email` queue. The load runs on a queue the dashboard already charts (the
 * overview and `/queue/email`), and the worker does nothing but the platform's own work for each job, so the
 * pages are timed against the charts' history being written as in production, not against a demo handler.
 * Idempotent because: it does nothing.
 */
import { createCatalog, defineJob } from '@tickwork/core';
import { catalog as demo } from '@tickwork/jobs';
import { z } from 'zod';

export const pagesNoop = defineJob({ name: 'bench.pages.noop', queue: 'email', schema: z.object({}), handler: async () => null });

export const catalog = createCatalog([...demo.jobs, pagesNoop]);
