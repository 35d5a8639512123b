import type { RedisClient } from '@tickwork/core';
import { runScriptMany } from '@tickwork/core';
import type { OccurrenceRecord } from '../history/history.js';
import { nextOccurrences, type OccurrenceRule } from '../rules/occurrences.js';
import { planOccurrences } from '../rules/catch-up.js';
import { historyCapOf, policiesOfCore, ruleOfCore, type StoredDef } from './definition.js';
import { historyKeysOf } from './shard-keys.js';
import { MERGE_RECORD } from './lua.js';

/** A history write: merge `patch` into record `id` (JSON null deletes a field), creating it with `defaults`. */
export interface RecordWrite {
  id: string;
  nominal: number;
  patch: Record<string, unknown>;
  defaults: Partial<OccurrenceRecord> & Record<string, unknown>;
}

/** Writes records of one schedule in one round trip (capped at the schedule's history cap). */
export async function writeRecords(redis: RedisClient, prefix: string, schedule: string, def: StoredDef, writes: readonly RecordWrite[], _now: number): Promise<void> {
  const k = historyKeysOf(prefix, schedule);
  const cap = historyCapOf(def.core);
  await runScriptMany(
    redis,
    MERGE_RECORD,
    writes.map((w) => ({
      keys: [k.history, k.records],
      argv: [cap, w.id, w.nominal, JSON.stringify(w.patch), JSON.stringify({ id: w.id, schedule, nominal: new Date(w.nominal).toISOString(), ...w.defaults }), '0', ''],
    })),
  );
}

/** The spacing from `at` to the rule's next occurrence (null if none): the default slowAfter's interval. */
export function intervalAfter(rule: OccurrenceRule, at: number): number | null {
  const next = nextOccurrences(rule, new Date(at), 1)[0];
  return next ? next.at.getTime() - at : null;
}

export interface ResumePlan {
  catchUps: { nominal: number; intervalMs: number | null }[];
  records: RecordWrite[];
}

/**
 * What resuming a paused schedule does with the occurrences of its pause, by its missed policy (the
 * scheduler's own planner, so the rule is the one of an outage): `skip` runs none; `once` runs the latest
 * inside `catchUpWindow`; `all` the latest `maxCatchUp` inside it. They run now as catch-ups. The others
 * stay `skipped-paused` (the dispatcher recorded them while paused; those it had not reached yet are
 * recorded here). Planned strictly before `now`: the next occurrence from now on is the due entry.
 */
export function resumePlan(id: string, def: StoredDef, due: number | null, now: number): ResumePlan {
  const pausedAt = def.paused?.at ?? now;
  const rule = ruleOfCore(id, def.core);
  const plan = planOccurrences({ rule, policies: policiesOfCore(def.core), cursor: pausedAt - 1, now: now - 1, graceMs: 0, lookaheadMs: 0 });
  const catchUps: ResumePlan['catchUps'] = [];
  const records: RecordWrite[] = [];
  const notReached = due ?? Number.NEGATIVE_INFINITY;
  for (const item of plan.items) {
    const nominal = item.at.getTime();
    if (item.action === 'catch-up') {
      catchUps.push({ nominal, intervalMs: intervalAfter(rule, nominal) });
      records.push({ id: `${id}@${item.at.toISOString()}`, nominal, patch: { trigger: 'catch-up', outcome: null, endedAt: null, error: null, enqueuedAt: new Date(now).toISOString() }, defaults: {} });
    } else if (nominal >= notReached) {
      records.push({ id: `${id}@${item.at.toISOString()}`, nominal, patch: { outcome: 'skipped-paused' }, defaults: { trigger: 'schedule', claimedAt: new Date(now).toISOString() } });
    }
  }
  return { catchUps, records: records.slice(-historyCapOf(def.core)) };
}
