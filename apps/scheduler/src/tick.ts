import type { AheadLift } from '@tickwork/schedules';
import { claimBatchSize, claimsTakenOver, createDispatcher, dueBacklog, dueBacklogGauge, dueLagGauge, occurrencesDispatched, type DispatchResult } from '@tickwork/schedules';
import type { Catalog, Logger, QueueSet, RedisClient } from '@tickwork/core';

export interface TickDeps {
  queues: QueueSet;
  redis: RedisClient;
  catalog: Catalog;
  log: Logger;
  graceMs: number;
  lookaheadMs: number;
  /** How long before its time an on-time occurrence is added: SCHEDULE_HEAD_START_MS, while the workers allow it (head-start.ts). */
  headStartMs?: number | (() => number) | undefined;
  leaseMs?: number | undefined;
  /** SCHEDULE_BATCH_MAX while every worker runs batches, else 1 (head-start.ts). */
  batchMax?: number | (() => number) | undefined;
  /** Occurrences added later than this after their planned time first check their claim still holds (below SCHEDULER_DEAD_AFTER_MS). */
  staleAfterMs?: number | undefined;
  /** SCHEDULE_ADD_AHEAD_MS with the engine's lift, when the installed BullMQ allows it (dispatch/lift-lane.ts). */
  addAhead?: { ms: number; lift: AheadLift; queues: () => readonly string[] } | undefined;
}

/**
 * The scheduler's tick: the store's dispatcher (claim due entries on every shard, enqueue, commit), whose
 * cost is O(occurrences due) whatever the number of schedules, plus the dispatcher's metrics.
 */
export function createTicker(deps: TickDeps) {
  const dispatcher = createDispatcher({
    redis: deps.redis,
    queues: deps.queues,
    catalog: deps.catalog,
    log: deps.log,
    graceMs: deps.graceMs,
    lookaheadMs: deps.lookaheadMs,
    // The loop ticks on while held occurrences wait for their time; shutdown awaits them (idle).
    waitHeld: false,
    ...(deps.leaseMs !== undefined && { leaseMs: deps.leaseMs }),
    ...(deps.staleAfterMs !== undefined && { staleAfterMs: deps.staleAfterMs }),
    ...(deps.headStartMs !== undefined && { headStartMs: deps.headStartMs }),
    ...(deps.batchMax !== undefined && { batchMax: deps.batchMax }),
    ...(deps.addAhead && { addAhead: deps.addAhead }),
  });
  return {
    /** The dispatcher's replica id, the scheduler registry's member (its lease tokens' prefix). */
    replica: dispatcher.replica,
    async tick(now = Date.now()): Promise<DispatchResult> {
      const result = await dispatcher.tick(now);
      claimBatchSize.observe(result.claimed);
      if (result.takenOver) claimsTakenOver.inc(result.takenOver);
      if (result.enqueued) occurrencesDispatched.inc({ action: 'enqueued' }, result.enqueued);
      if (result.caughtUp) occurrencesDispatched.inc({ action: 'caught-up' }, result.caughtUp);
      if (result.missed) occurrencesDispatched.inc({ action: 'missed' }, result.missed);
      if (result.skippedPaused) occurrencesDispatched.inc({ action: 'skipped-paused' }, result.skippedPaused);
      return result;
    },
    /** Resolves once the occurrences held for their exact time are added, then stops lifting (awaited on shutdown). */
    idle: () => dispatcher.idle(),
    /** The backlog gauges: 32 cheap commands in one round trip (ZCOUNT and the first entry per shard). */
    async measure(now = Date.now()): Promise<void> {
      const { backlog, oldestDue } = await dueBacklog(deps.redis, deps.queues.prefix, now);
      dueBacklogGauge.set(backlog);
      dueLagGauge.set(oldestDue === null ? 0 : Math.max(0, now - oldestDue) / 1000);
    },
  };
}
