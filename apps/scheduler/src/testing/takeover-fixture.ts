import { createCatalog, createLogger, QueueSet, type RedisClient } from '@tickwork/core';
import { createSchedules, readHistory } from '@tickwork/schedules';
import { fxTenant, FX_TENANT_RUNS_KEY } from './fixture-catalog.js';

/**
 * What the scheduler takeover tests share: every-second runtime schedules of fx.tenant, how often each
 * occurrence ran, and the final check that every occurrence ran once or was recorded not run.
 */

const log = createLogger('test', 'silent');

/** `n` runtime schedules `<tag>:<i>` firing every second, with room in their history for the whole test. */
export async function everySecond(redis: RedisClient, prefix: string, tag: string, n: number): Promise<string[]> {
  const queues = new QueueSet(redis, prefix, log);
  const store = createSchedules({ redis, queues, catalog: createCatalog([fxTenant]), log });
  const ids = Array.from({ length: n }, (_, i) => `${tag}:${String(i).padStart(3, '0')}`);
  await Promise.all(ids.map((id) => store.upsert(id, { job: fxTenant, pattern: '* * * * * *', tz: 'UTC', data: { tenant: id }, history: 200 })));
  await queues.close();
  return ids;
}

/** How many times each occurrence's handler ran, by occurrence key. */
export function runCounts(redis: RedisClient): Promise<Record<string, string>> {
  return redis.hgetall(FX_TENANT_RUNS_KEY);
}

/**
 * Per schedule, every occurrence from its first to its last record is there, and each ran exactly once or
 * was recorded not run (missed, or skipped by the overlap policy) without running. Returns what is not so
 * (empty when all is well).
 */
export async function unsettled(redis: RedisClient, prefix: string, ids: readonly string[]): Promise<string[]> {
  const counts = await runCounts(redis);
  const problems: string[] = [];
  for (const id of ids) {
    const history = (await readHistory(redis, prefix, id, 200)).reverse();
    history.forEach((h, k) => {
      const prev = history[k - 1];
      if (prev && Date.parse(h.nominal) - Date.parse(prev.nominal) !== 1000) problems.push(`gap before ${h.id}`);
      const runs = counts[h.id];
      const ok = h.outcome === 'missed' || h.outcome === 'skipped-overlap' ? runs === undefined : (h.outcome === 'completed' || h.outcome === 'caught-up') && runs === '1';
      if (!ok) problems.push(`${h.id}: ${h.outcome ?? 'no outcome'}, ran ${runs ?? 0} times`);
    });
  }
  return problems;
}
