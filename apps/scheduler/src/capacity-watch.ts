import { capacityReport, formatRatio, publishCapacityGauges, swapStatus, type Alerter } from '@tickwork/operations';
import { readMemoryInfo, type Catalog, type Logger, type RedisMemoryInfo, type RedisClient } from '@tickwork/core';

/**
 * The scheduler's capacity watch. Every interval it refreshes the capacity gauges of `/metrics` (Redis
 * memory, the sampled estimate per component, DLQ size and age per queue) and alerts once when Redis passes
 * REDIS_MEMORY_ALERT_RATIO of its maxmemory, and once when it falls back below the ratio minus
 * MEMORY_HYSTERESIS (so memory hovering at the line does not alert on every check).
 *
 * Like the schedule watchdog, the last judged status lives in Redis and is swapped atomically, so however
 * many scheduler replicas check, each transition alerts once.
 */

/** How far below the alert ratio memory must fall before the all-clear. */
export const MEMORY_HYSTERESIS = 0.05;
export const capacityStatusKey = (prefix: string) => `${prefix}:meta:capacity`;
const MEMORY_FIELD = 'redis-memory';

export type MemoryStatus = 'high' | 'ok';

/** `high` at or above the ratio, `ok` below the ratio minus the hysteresis, null in between or without a maxmemory. */
export function judgeMemory(ratio: number | null, alertRatio: number): MemoryStatus | null {
  if (ratio === null) return null; // no maxmemory: nothing to compare with; the start-up warning says so
  if (ratio >= alertRatio) return 'high';
  if (ratio < alertRatio - MEMORY_HYSTERESIS) return 'ok';
  return null;
}

export interface CapacityWatchDeps {
  redis: RedisClient;
  prefix: string;
  catalog: Catalog;
  log: Logger;
  alerter: Pick<Alerter, 'redisMemory'>;
  alertRatio: number;
  samples?: number;
}

export function createCapacityWatch(deps: CapacityWatchDeps) {
  // Redis at its maxmemory refuses the write that records a new status; this process then alerts on its own,
  // once, rather than not at all.
  let alertedUnrecorded = false;

  async function checkMemory(memory: RedisMemoryInfo): Promise<void> {
    const status = judgeMemory(memory.ratio, deps.alertRatio);
    if (status === null || memory.ratio === null) return;
    const base = { usedBytes: memory.usedBytes, maxBytes: memory.maxBytes, ratio: memory.ratio, threshold: deps.alertRatio };
    const high = () =>
      deps.alerter.redisMemory({
        type: 'redis_memory_high',
        ...base,
        message: `Redis uses ${formatRatio(memory.ratio ?? 0)} of its maxmemory (alert at ${formatRatio(deps.alertRatio)}); at 100% it refuses writes and every app stops. Raise maxmemory or see \`tickwork stats\` for what grows`,
      });
    let swapped: { changed: boolean; previous: string | null };
    try {
      swapped = await swapStatus(deps.redis, capacityStatusKey(deps.prefix), MEMORY_FIELD, status);
    } catch (err) {
      if (status !== 'high' || !/^OOM/.test((err as Error).message)) throw err;
      if (!alertedUnrecorded) high();
      alertedUnrecorded = true;
      return;
    }
    alertedUnrecorded = false;
    if (!swapped.changed) return;
    if (status === 'high') high();
    else if (swapped.previous === 'high') {
      deps.alerter.redisMemory({ type: 'redis_memory_ok', ...base, message: `Redis memory is back to ${formatRatio(memory.ratio)} of its maxmemory` });
    }
  }

  return {
    checkMemory,
    /** One pass: the memory alert first (one INFO), then the sampled report for the gauges. */
    async check(): Promise<void> {
      await checkMemory(await readMemoryInfo(deps.redis));
      publishCapacityGauges(await capacityReport(deps, deps.samples === undefined ? {} : { samples: deps.samples }));
    },
  };
}
