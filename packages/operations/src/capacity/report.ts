import type { RedisClient } from '@tickwork/core';
import type { Catalog } from '@tickwork/core';
import { dlqName } from '@tickwork/core';
import { pipelineBySlot, type SlotCommand } from '@tickwork/core';
import { keyspaceOn, queueStructureKey } from '@tickwork/core';
import { knownQueues } from '@tickwork/core';
import { scheduleRegistryKey } from '@tickwork/schedules';
import { estimateComponents, type CapacityEstimate } from './estimate.js';
import { memoryConfigProblems, readMemoryInfo, type RedisMemoryInfo } from '@tickwork/core';

export interface QueueCapacity {
  queue: string;
  /** Exact: lengths of BullMQ's lists and sets (waiting includes prioritized). */
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
  redis: RedisClient;
  prefix: string;
  catalog: Catalog;
}

/** Queues and schedules to look at: the catalog's and every one registered in Redis (a DLQ outlives its job). */
async function names(src: CapacitySource): Promise<{ queues: string[]; schedules: string[] }> {
  const registered = await src.redis.hkeys(scheduleRegistryKey(src.prefix));
  return {
    queues: [...new Set([...src.catalog.queues, ...(await knownQueues(src.redis, src.prefix))])].sort(),
    schedules: [...new Set([...src.catalog.scheduled().map((j) => j.name), ...registered])].sort(),
  };
}

/**
 * Counts read straight from BullMQ's lists and sets, all queues in two pipelined round trips (per slot
 * on a cluster). Read-only on
 * purpose (opening BullMQ Queues would write their meta hashes), so it works, and changes nothing, on a
 * Redis that is full. A DLQ's entries are its waiting, prioritized and delayed jobs, as countDeadLetters
 * counts them; the oldest is the first of each, by the job's creation time.
 */
async function queueCapacity(redis: RedisClient, prefix: string, queues: readonly string[], now: Date): Promise<QueueCapacity[]> {
  const PER_QUEUE = 12;
  const reads: SlotCommand[] = [];
  const dlqKey = (queue: string, s: string) => queueStructureKey(keyspaceOn(redis, prefix, queue), dlqName(queue), s);
  for (const queue of queues) {
    const k = (s: string) => queueStructureKey(keyspaceOn(redis, prefix, queue), queue, s);
    const d = (s: string) => dlqKey(queue, s);
    reads.push(['llen', k('wait')], ['zcard', k('prioritized')], ['zcard', k('delayed')], ['llen', k('active')], ['zcard', k('completed')], ['zcard', k('failed')]);
    reads.push(['llen', d('wait')], ['zcard', d('prioritized')], ['zcard', d('delayed')]);
    reads.push(['lindex', d('wait'), -1], ['zrange', d('prioritized'), '0', '0'], ['zrange', d('delayed'), '0', '0']); // new jobs are LPUSHed
  }
  const r = (await pipelineBySlot(redis, reads)).map(([err, v]) => (err ? null : v));
  const oldestCandidates = queues.map((queue, q) =>
    r.slice(q * PER_QUEUE + 9, (q + 1) * PER_QUEUE).flatMap((v) => (Array.isArray(v) ? v : [v])).filter((id): id is string => typeof id === 'string').map((id) => dlqKey(queue, id)),
  );
  const stamps = oldestCandidates.flat().map((key): SlotCommand => ['hget', key, 'timestamp']);
  const created = (await pipelineBySlot(redis, stamps)).map(([err, v]) => (err || v === null ? NaN : Number(v)));
  let at = 0;
  return queues.map((queue, q) => {
    const [wait = 0, prioritized = 0, delayed = 0, active = 0, completed = 0, failed = 0, dw = 0, dp = 0, dd = 0] = r.slice(q * PER_QUEUE, q * PER_QUEUE + 9).map(Number);
    const times = (oldestCandidates[q] ?? []).map(() => created[at++] ?? NaN).filter(Number.isFinite);
    const oldest = times.length > 0 ? Math.min(...times) : null;
    return {
      queue,
      waiting: wait + prioritized,
      delayed,
      active,
      completed,
      failed,
      dlq: {
        entries: dw + dp + dd,
        oldestAt: oldest === null ? null : new Date(oldest).toISOString(),
        oldestAgeSeconds: oldest === null ? null : Math.max(0, Math.round((now.getTime() - oldest) / 1000)),
      },
    };
  });
}

/** Everything `tickwork stats`, the dashboard's capacity page and the scheduler's gauges show. */
export async function capacityReport(src: CapacitySource, opts: { samples?: number; now?: Date } = {}): Promise<CapacityReport> {
  const now = opts.now ?? new Date();
  const memory = await readMemoryInfo(src.redis);
  const { queues, schedules } = await names(src);
  const estimate = await estimateComponents(src.redis, { prefix: src.prefix, queues, schedules, ...(opts.samples !== undefined && { samples: opts.samples }) });
  return {
    at: now.toISOString(),
    memory,
    estimate,
    queues: await queueCapacity(src.redis, src.prefix, queues, now),
    problems: memoryConfigProblems(memory),
  };
}
