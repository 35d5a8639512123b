import type { AnyJob } from '@tickwork/core';
import { ruleOf, type OccurrenceRule } from './occurrences.js';

/**
 * The rule a schedule really fires on: its own, or the staging SCHEDULE_SPEEDUP interval. The scheduler
 * computes occurrences with it; the worker (late runs) and the dashboard (preview, health) must use the
 * same one, or they would judge a sped-up schedule by its production pattern.
 */
export function effectiveRule(job: AnyJob, speedupMs?: number | null): OccurrenceRule {
  const spec = job.schedule;
  if (!spec) throw new Error(`job "${job.name}" has no schedule`);
  if (speedupMs !== undefined && speedupMs !== null) return { kind: 'every', everyMs: speedupMs, tz: spec.tz };
  return ruleOf(job.name, spec);
}

/**
 * The speed-up interval a scheduler registered the schedule with (the JSON in the schedule registry hash),
 * or null: not registered, not sped up, or unreadable (then the production rule is the safe reading).
 */
export function speedupOfRegistration(registration: string | null | undefined): number | null {
  if (!registration) return null;
  try {
    const value = (JSON.parse(registration) as { speedupMs?: unknown }).speedupMs;
    return typeof value === 'number' && value > 0 ? value : null;
  } catch {
    return null;
  }
}
