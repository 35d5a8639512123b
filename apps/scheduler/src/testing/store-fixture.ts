import { createCatalog, createLogger, defineJob, QueueSet, type ScheduleSpec } from '@tickwork/core';
import { createLiftAhead } from '@tickwork/bullmq-engine';
import { createCatalogSource, createDispatcher, createSchedules } from '@tickwork/schedules';
import type { Redis } from 'ioredis';
import { z } from 'zod';

/**
 * One schedule of either kind in a fresh prefix, for tests that must hold for catalog and runtime
 * schedules alike: `catalog` is a job's `schedule` field reconciled into the store, `runtime` the same
 * definition upserted through the API under an id with ':' (so job ids are encoded).
 */
export type ScheduleKind = 'catalog' | 'runtime';
export const KINDS: ScheduleKind[] = ['catalog', 'runtime'];
const log = createLogger('test', 'silent');
let n = 0;

export async function scheduleOf(redis: Redis, kind: ScheduleKind, spec: ScheduleSpec, createdAt: number, opts: { graceMs?: number; lookaheadMs?: number; leaseMs?: number; headStartMs?: number; addAheadMs?: number; sweep?: false } = {}) {
  const prefix = `k${++n}${kind[0]}`;
  const queues = new QueueSet(redis, prefix, log);
  const handler = async () => undefined;
  const job =
    kind === 'catalog'
      ? defineJob({ name: 'minutely', queue: 'q', schema: z.object({}), schedule: spec, handler })
      : defineJob({ name: 'minutely', queue: 'q', schema: z.object({}), handler });
  const catalog = createCatalog([job]);
  const id = kind === 'catalog' ? 'minutely' : 'tenant:7:minutely';
  const store = createSchedules({ redis, queues, catalog, log, now: () => createdAt });
  if (kind === 'catalog') await createCatalogSource({ redis, queues, catalog, log, now: () => createdAt }).put(job);
  // A history cap large enough for these tests' outages (the runtime default keeps 5).
  else await store.upsert(id, { job: 'minutely', history: 50, ...spec } as Parameters<typeof store.upsert>[1]);
  // Adding ahead: the engine's lift, as the scheduler's main.ts binds it. A dispatcher that adds ahead lifts
  // until its idle() (its sweep), so a test awaits idle() on each it made.
  const lift = opts.addAheadMs ? createLiftAhead(queues, log) : undefined;
  const addAhead = lift && {
    ms: opts.addAheadMs as number,
    lift,
    // sweep: false leaves only the lift's timers (each replica's sweep of every queue is off).
    queues: () => (opts.sweep === false ? [] : catalog.queues),
  };
  const dispatcher = () =>
    createDispatcher({
      redis,
      queues,
      catalog,
      log,
      graceMs: opts.graceMs ?? 10_000,
      lookaheadMs: opts.lookaheadMs ?? 0,
      ...(opts.leaseMs && { leaseMs: opts.leaseMs }),
      ...(opts.headStartMs && { headStartMs: opts.headStartMs }),
      ...(addAhead && { addAhead }),
    });
  return { prefix, queues, catalog, id, store, dispatcher, storeAt: (now: number) => createSchedules({ redis, queues, catalog, log, now: () => now }) };
}
