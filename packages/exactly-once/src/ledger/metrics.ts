import { Counter } from 'prom-client';
import { metricsRegistry } from '@tickwork/core';

export const duplicatesSuppressed = new Counter({
  name: 'tickwork_duplicates_suppressed_total',
  help: 'Deliveries whose run had already completed: the handler was not run again',
  labelNames: ['queue', 'job'] as const,
  registers: [metricsRegistry],
});

export const duplicatesDeferred = new Counter({
  name: 'tickwork_duplicates_deferred_total',
  help: 'Deliveries of a run another worker holds a live lease on: delayed and retried later',
  labelNames: ['queue', 'job'] as const,
  registers: [metricsRegistry],
});

export const leaseTakeovers = new Counter({
  name: 'tickwork_lease_takeovers_total',
  help: 'Runs taken over after their previous holder stopped renewing its lease (crash, kill -9)',
  labelNames: ['queue', 'job'] as const,
  registers: [metricsRegistry],
});

export const leasesLost = new Counter({
  name: 'tickwork_leases_lost_total',
  help: 'Runs aborted because their lease expired and another delivery took them over',
  labelNames: ['queue', 'job'] as const,
  registers: [metricsRegistry],
});

export const overlapSkipped = new Counter({
  name: 'tickwork_overlap_skipped_total',
  help: 'Scheduled occurrences skipped because the previous run of the schedule was still running',
  labelNames: ['queue', 'schedule', 'policy'] as const,
  registers: [metricsRegistry],
});

export const duplicatesRanUnclaimed = new Counter({
  name: 'tickwork_duplicates_unclaimed_total',
  help: 'Deliveries that ran a handler without steps while another delivery of the same job held or had completed its run (lazy claim)',
  labelNames: ['queue', 'job'] as const,
  registers: [metricsRegistry],
});
