import {
  decideLateRun,
  policiesOf,
  effectiveRule,
  speedupOfRegistration,
  scheduleKeys,
  scheduleRegistryKey,
  type AnyJob,
  type LateRunDecision,
  type ScheduledRun,
} from '@tickwork/runtime';
import type { Redis } from 'ioredis';

const ON_TIME: LateRunDecision = { action: 'run', catchUp: false };

/**
 * Applies the schedule's missed-run policy to an occurrence that starts `graceMs` or more after its time
 * (workers were down while the scheduler kept enqueuing; see decideLateRun). Redis is read only for a late
 * occurrence: the scheduler's cursor, and its registration for a SCHEDULE_SPEEDUP interval (the rule the
 * occurrences were really computed with).
 */
export async function judgeLateOccurrence(
  redis: Redis,
  prefix: string,
  job: AnyJob,
  scheduled: ScheduledRun,
  graceMs: number,
  now = Date.now(),
): Promise<LateRunDecision> {
  const spec = job.schedule;
  if (!spec || now - scheduled.nominal <= graceMs) return ON_TIME;
  const [cursor, registration] = await Promise.all([
    redis.get(scheduleKeys(prefix, scheduled.schedule).cursor),
    redis.hget(scheduleRegistryKey(prefix), scheduled.schedule),
  ]);
  return decideLateRun({
    rule: effectiveRule(job, speedupOfRegistration(registration)),
    policies: policiesOf(job.name, spec),
    nominal: scheduled.nominal,
    now,
    graceMs,
    scheduledUpTo: cursor === null ? undefined : Number(cursor),
  });
}
