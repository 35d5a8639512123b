import { historyKeysOf, lastOutcomes, parseDef, policiesOfCore, ruleOfCore, scheduleHealth, SCHEDULE_SHARDS, shardKeys, shardOf, slowAfterMsOf, type OccurrenceRecord } from '@tickwork/schedules';
import { pipelineBySlot, type Catalog, type Logger, type SlotCommand, type RedisClient } from '@tickwork/core';
import type { Alerter } from '@tickwork/operations';

/**
 * The watchdog for runtime schedules that opted in (`watch: true`), without scanning them: per shard,
 * - `watch` (id -> when to judge it next): the dispatcher adds a schedule at its first occurrence; only
 *   entries past their time are judged (scheduleHealth, the same rule as catalog schedules and the
 *   dashboard), then put back at the time they could next turn stale (last success + 3 intervals);
 * - `stale` (id -> when it went stale): ZADD NX makes one replica alert; the few members are re-checked each
 *   pass and the one whose ZREM removes a recovered schedule sends the all-clear;
 * - `running` (occurrence -> when it becomes slow): the worker adds a run at its start and removes it at its
 *   end; entries past their time are slow runs, alerted once (the ZREM that removes one wins).
 * Cost per pass: the entries past their time, at most PASS_LIMIT per shard and index.
 */
const PASS_LIMIT = 200;

export interface IndexedWatchDeps {
  catalog: Catalog;
  redis: RedisClient;
  prefix: string;
  log: Logger;
  alerter: Pick<Alerter, 'scheduleHealth'>;
}

export async function watchIndexed(deps: IndexedWatchDeps, now = new Date()): Promise<void> {
  const { redis, prefix } = deps;
  const t = now.getTime();
  const reads: SlotCommand[] = [];
  for (let s = 0; s < SCHEDULE_SHARDS; s++) {
    const k = shardKeys(prefix, s);
    reads.push(['zrangebyscore', k.watch, '-inf', t, 'LIMIT', 0, PASS_LIMIT]);
    reads.push(['zrange', k.stale, '0', String(PASS_LIMIT - 1), 'WITHSCORES']);
    reads.push(['zrangebyscore', k.running, '-inf', t, 'LIMIT', 0, PASS_LIMIT]);
  }
  const replies = (await pipelineBySlot(redis, reads)).map(([, r]) => (r ?? []) as string[]);
  for (let s = 0; s < SCHEDULE_SHARDS; s++) {
    for (const id of replies[3 * s] ?? []) await judge(deps, id, t).catch((err: unknown) => warn(deps, id, err));
    const stale = replies[3 * s + 1] ?? [];
    for (let i = 0; i < stale.length; i += 2) await recovery(deps, stale[i] as string, Number(stale[i + 1])).catch((err: unknown) => warn(deps, stale[i] ?? '', err));
    for (const occ of replies[3 * s + 2] ?? []) await slow(deps, occ, t).catch((err: unknown) => warn(deps, occ, err));
  }
}

function warn(deps: IndexedWatchDeps, what: string, err: unknown): void {
  deps.log.warn({ err: { message: (err as Error).message }, schedule: what }, 'schedule watchdog could not judge the schedule; will retry');
}

async function judge(deps: IndexedWatchDeps, id: string, t: number): Promise<void> {
  const k = shardKeys(deps.prefix, shardOf(id));
  const raw = await deps.redis.hget(k.defs, id);
  if (!raw) {
    await deps.redis.zrem(k.watch, id);
    return;
  }
  const def = parseDef(raw);
  const rule = ruleOfCore(id, def.core);
  const { lastSuccess, lastFailure } = await lastOutcomes(deps.redis, deps.prefix, id);
  const oldest = await deps.redis.zrange(historyKeysOf(deps.prefix, id).history, '0', '0', 'WITHSCORES');
  const firstSeen = oldest[1] === undefined ? null : new Date(Number(oldest[1])).toISOString();
  const health = scheduleHealth({ rule, lastSuccess, lastFailure, firstSeen, now: new Date(t) });
  const interval = health.intervalMs ?? 60_000;
  const successAt = lastSuccess ? Date.parse(lastSuccess.endedAt ?? lastSuccess.nominal) : null;
  const nextJudge = health.status === 'stale' || successAt === null ? t + interval : Math.max(t + interval, successAt + 3 * interval);
  await deps.redis.zadd(k.watch, nextJudge, id);
  if (health.status !== 'stale' || def.paused) return;
  if ((await deps.redis.zadd(k.stale, 'NX', t, id)) !== 1) return; // another replica alerted
  deps.alerter.scheduleHealth({
    type: 'schedule_stale',
    schedule: id,
    queue: deps.catalog.get(def.core.j)?.queue ?? '?',
    reason: health.reason,
    lastSuccessAt: lastSuccess ? (lastSuccess.endedAt ?? lastSuccess.nominal) : null,
    lastExpectedAt: health.lastExpected,
    message: `schedule "${id}" has not succeeded within two intervals: ${health.reason}`,
  });
}

async function recovery(deps: IndexedWatchDeps, id: string, staleSince: number): Promise<void> {
  const { lastSuccess } = await lastOutcomes(deps.redis, deps.prefix, id);
  const k = shardKeys(deps.prefix, shardOf(id));
  if (!lastSuccess || Date.parse(lastSuccess.endedAt ?? lastSuccess.nominal) <= staleSince) return;
  if ((await deps.redis.zrem(k.stale, id)) !== 1) return;
  const raw = await deps.redis.hget(k.defs, id);
  const queue = raw ? (deps.catalog.get(parseDef(raw).core.j)?.queue ?? '?') : '?';
  const at = lastSuccess.endedAt ?? lastSuccess.nominal;
  deps.alerter.scheduleHealth({ type: 'schedule_recovered', schedule: id, queue, reason: 'a run succeeded', lastSuccessAt: at, lastExpectedAt: null, message: `schedule "${id}" is ok again` });
}

async function slow(deps: IndexedWatchDeps, occurrence: string, t: number): Promise<void> {
  const id = occurrence.slice(0, occurrence.lastIndexOf('@'));
  const k = shardKeys(deps.prefix, shardOf(id));
  const raw = await deps.redis.hget(historyKeysOf(deps.prefix, id).records, occurrence);
  if ((await deps.redis.zrem(k.running, occurrence)) !== 1) return; // alerted by another replica, or ended
  const record = raw ? (JSON.parse(raw) as OccurrenceRecord) : null;
  if (!record?.startedAt || record.endedAt) return;
  const def = await deps.redis.hget(k.defs, id);
  const core = def ? parseDef(def).core : null;
  const runningForMs = t - Date.parse(record.startedAt);
  deps.alerter.scheduleHealth({
    type: 'schedule_slow_run',
    schedule: id,
    queue: core ? (deps.catalog.get(core.j)?.queue ?? '?') : '?',
    occurrence,
    nominal: record.nominal,
    startedAt: record.startedAt,
    runningForMs,
    slowAfterMs: core ? slowAfterMsOf(policiesOfCore(core), null) : runningForMs,
    message: `a run of schedule "${id}" (due ${record.nominal}) has been running for ${Math.round(runningForMs / 1000)} s`,
  });
}
