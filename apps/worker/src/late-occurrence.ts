import { decideLateRun, effectiveRule, parseDef, policiesOfCore, ruleOfCore, shardKeys, shardOf, type LateRunDecision } from '@tickwork/schedules';
import { policiesOf, type AnyJob, type ScheduledRun, type RedisClient } from '@tickwork/core';

const ON_TIME: LateRunDecision = { action: 'run', catchUp: false };

/**
 * Applies the schedule's missed-run policy to an occurrence that starts `graceMs` or more after its time
 * (workers were down while the scheduler kept enqueuing; see decideLateRun). Redis is read only for a late
 * occurrence (the rare path): the schedule's definition in the store (its rule, a staging speed-up
 * included, and policies) and its due entry, the next occurrence the scheduler has not dealt with yet.
 */
export async function judgeLateOccurrence(
  redis: RedisClient,
  prefix: string,
  job: AnyJob,
  scheduled: ScheduledRun,
  graceMs: number,
  now = Date.now(),
): Promise<LateRunDecision> {
  if (now - scheduled.nominal <= graceMs) return ON_TIME;
  const id = scheduled.schedule;
  const sk = shardKeys(prefix, shardOf(id));
  const [[, raw], [, due], [, inflight]] = ((await redis.pipeline().hget(sk.defs, id).zscore(sk.due, id).hget(sk.inflight, id).exec()) ?? []) as [
    [unknown, string | null],
    [unknown, string | null],
    [unknown, string | null],
  ];
  // Dealt with up to just before the due entry (or the nominal a dispatcher holds a claim on right now).
  const next = due !== null ? Number(due) : inflight ? Number(inflight.split(':')[0]) : null;
  const scheduledUpTo = next === null ? undefined : next - 1;
  if (raw) {
    const def = parseDef(raw);
    return decideLateRun({ rule: ruleOfCore(id, def.core), policies: policiesOfCore(def.core), nominal: scheduled.nominal, now, graceMs, scheduledUpTo });
  }
  // Gone from the store (removed; the start gate skips the run) or a catalog schedule not reconciled yet.
  const spec = job.schedule;
  if (!spec || id !== job.name) return ON_TIME;
  return decideLateRun({ rule: effectiveRule(job), policies: policiesOf(job.name, spec), nominal: scheduled.nominal, now, graceMs, scheduledUpTo });
}
