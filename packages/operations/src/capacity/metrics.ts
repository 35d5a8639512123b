import { Gauge } from 'prom-client';
import { metricsRegistry } from '@tickwork/core';
import type { CapacityReport } from './report.js';

const gauge = (name: string, help: string, labelNames: string[] = []) => new Gauge({ name, help, labelNames, registers: [metricsRegistry] });

export const redisUsedMemory = gauge('tickwork_redis_used_memory_bytes', 'Redis used_memory (INFO memory)');
export const redisMaxMemory = gauge('tickwork_redis_maxmemory_bytes', 'Redis maxmemory; 0 when unset');
export const redisMemoryRatio = gauge('tickwork_redis_memory_ratio', 'used_memory / maxmemory; absent when maxmemory is unset');
export const redisComponentBytes = gauge(
  'tickwork_redis_component_bytes',
  'Estimated Redis bytes per tickwork component, from sampled key sizes (an estimate)',
  ['component'],
);
export const dlqEntries = gauge('tickwork_dlq_entries', 'Entries in the dead-letter queue of a queue', ['queue']);
export const dlqOldestAge = gauge('tickwork_dlq_oldest_age_seconds', 'Age of the oldest entry in the dead-letter queue of a queue; 0 when empty', ['queue']);

/** Sets every capacity gauge from one report (the scheduler refreshes them on an interval, not per scrape). */
export function publishCapacityGauges(report: CapacityReport): void {
  redisUsedMemory.set(report.memory.usedBytes);
  redisMaxMemory.set(report.memory.maxBytes);
  redisMemoryRatio.reset();
  if (report.memory.ratio !== null) redisMemoryRatio.set(report.memory.ratio);
  for (const c of report.estimate.components) redisComponentBytes.set({ component: c.component }, c.bytes);
  dlqEntries.reset();
  dlqOldestAge.reset();
  for (const q of report.queues) {
    dlqEntries.set({ queue: q.queue }, q.dlq.entries);
    dlqOldestAge.set({ queue: q.queue }, q.dlq.oldestAgeSeconds ?? 0);
  }
}
