import { occurrencesBetween, type OccurrenceRule } from './occurrences.js';
import type { SchedulePolicies } from '@tickwork/core';
import { catchUpQuota } from './catch-up.js';

/**
 * The worker's side of the missed-run policy. The scheduler applies `missed` when *it* was down; when only
 * the workers were down, it kept enqueuing on time, and without this every queued occurrence would run
 * when workers return (a catch-up flood). So a scheduled occurrence that starts more than the grace period
 * after its nominal time is judged by the same policy, as if the scheduler were planning it now:
 * - `skip`: not run, recorded as `missed`;
 * - `once`: run (as a catch-up) only if no later occurrence of the schedule is already due;
 * - `all`: run (as a catch-up) if fewer than `maxCatchUp` later occurrences are already due.
 * `once` and `all` run only occurrences inside `catchUpWindow`, as the scheduler does.
 */
export type LateRunDecision =
  | { action: 'run'; catchUp: false }
  | { action: 'run'; catchUp: true; lateByMs: number; laterDue: number }
  | { action: 'missed'; lateByMs: number; laterDue: number; reason: string };

export interface LateRunInput {
  rule: OccurrenceRule;
  policies: Pick<SchedulePolicies, 'missed' | 'catchUpWindowMs' | 'maxCatchUp'>;
  /** The occurrence's nominal time, ms. */
  nominal: number;
  now: number;
  /** Started within this after its nominal time, an occurrence is on time and runs as usual. */
  graceMs: number;
  /**
   * The scheduler's cursor (nominal ms of the last occurrence it has enqueued or recorded), if known. Later
   * occurrences past it are not counted as due: the scheduler has not dealt with them yet and will apply the
   * policy to them itself when it catches up, so counting them here would drop this one for nothing.
   */
  scheduledUpTo?: number | undefined;
}

/** Pure: decides whether a scheduled occurrence that starts at `now` may run. */
export function decideLateRun(input: LateRunInput): LateRunDecision {
  const { rule, policies, nominal, now } = input;
  const lateByMs = now - nominal;
  if (lateByMs <= input.graceMs) return { action: 'run', catchUp: false };
  const horizon = Math.min(now, input.scheduledUpTo ?? now);
  // Only as many later occurrences as can change the answer are counted (a long outage has many).
  const quota = catchUpQuota(policies);
  const laterDue = horizon > nominal ? occurrencesBetween(rule, new Date(nominal), new Date(horizon), quota).occurrences.length : 0;
  const missed = (reason: string): LateRunDecision => ({ action: 'missed', lateByMs, laterDue, reason });
  if (policies.missed === 'skip') return missed(`started ${lateByMs} ms after its time (missed: 'skip')`);
  if (nominal < now - policies.catchUpWindowMs) {
    return missed(`started ${lateByMs} ms after its time, outside the catch-up window of ${policies.catchUpWindowMs} ms`);
  }
  if (laterDue >= quota) {
    return missed(
      policies.missed === 'once'
        ? `started ${lateByMs} ms after its time and a later occurrence is already due (missed: 'once')`
        : `started ${lateByMs} ms after its time and ${quota} later occurrences are already due (missed: 'all', maxCatchUp ${quota})`,
    );
  }
  return { action: 'run', catchUp: true, lateByMs, laterDue };
}
