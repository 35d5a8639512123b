import type { Redis } from 'ioredis';
import type { Catalog } from '../catalog.js';
import { countDeadLetters, oldestDeadLetterAt } from '../dlq/admin.js';
import type { QueueSet } from '../queues.js';
import { knownQueues } from '../registry.js';
import { scheduleRegistryKey } from '../schedule/keys.js';
import { estimateComponents, type CapacityEstimate } from './estimate.js';
import { memoryConfigProblems, readMemoryInfo, type RedisMemoryInfo } from './memory-info.js';

export interface QueueCapacity {
  queue: string;
  /** Exact, from BullMQ's job counts. */
  waiting: number;
  delayed: number;
  active: number;
  completed: number;
  failed: number;
  dlq: { entries: number; oldestAt: string | null; oldestAgeSeconds: number | null };
}

export interface CapacityReport {
  at: string;
  memory: RedisMemoryInfo;
  /** Sampled: an estimate, see `estimate.sampledKeys`. */
  estimate: CapacityEstimate;
  queues: QueueCapacity[];
  /** Redis memory settings that put tickwork at risk, with what to set (memoryConfigProblems). */
  problems: string[];
}

export interface CapacitySource {
  redis: Redis;
  queues: QueueSet;
  catalog: Catalog;
}

/** Queues and schedules to look at: the catalog's and every one registered in Redis (a DLQ outlives its job). */
async function names(src: CapacitySource): Promise<{ queues: string[]; schedules: string[] }> {
  const registered = await src.redis.hkeys(scheduleRegistryKey(src.queues.prefix));
  return {
    queues: [...new Set([...src.catalog.queues, ...(await knownQueues(src.redis, src.queues.prefix))])].sort(),
    schedules: [...new Set([...src.catalog.scheduled().map((j) => j.name), ...registered])].sort(),
  };
}

async function queueCapacity(src: CapacitySource, queue: string, now: Date): Promise<QueueCapacity> {
  const counts = await src.queues.get(queue).getJobCounts('waiting', 'prioritized', 'delayed', 'active', 'completed', 'failed');
  const oldest = await oldestDeadLetterAt(src.queues, queue);
  return {
    queue,
    waiting: (counts.waiting ?? 0) + (counts.prioritized ?? 0),
    delayed: counts.delayed ?? 0,
    active: counts.active ?? 0,
    completed: counts.completed ?? 0,
    failed: counts.failed ?? 0,
    dlq: {
      entries: await countDeadLetters(src.queues, queue),
      oldestAt: oldest?.toISOString() ?? null,
      oldestAgeSeconds: oldest ? Math.max(0, Math.round((now.getTime() - oldest.getTime()) / 1000)) : null,
    },
  };
}

/** Everything `tickwork stats`, the dashboard's capacity page and the scheduler's gauges show. */
export async function capacityReport(src: CapacitySource, opts: { samples?: number; now?: Date } = {}): Promise<CapacityReport> {
  const now = opts.now ?? new Date();
  const memory = await readMemoryInfo(src.redis);
  const { queues, schedules } = await names(src);
  const estimate = await estimateComponents(src.redis, { prefix: src.queues.prefix, queues, schedules, ...(opts.samples !== undefined && { samples: opts.samples }) });
  return {
    at: now.toISOString(),
    memory,
    estimate,
    queues: await Promise.all(queues.map((q) => queueCapacity(src, q, now))),
    problems: memoryConfigProblems(memory),
  };
}
