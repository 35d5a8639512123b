import { occurrencesBetween, type Occurrence, type OccurrenceRule } from './occurrences.js';
import type { SchedulePolicies } from '@tickwork/core';

/**
 * - `enqueue`: due now or within the look-ahead; enqueued (delayed to its nominal time) as a normal run;
 * - `catch-up`: was due while nobody was scheduling; run now, flagged `isCatchUp`;
 * - `missed`: was due, not run by policy (or outside the catch-up window); recorded as `missed`.
 */
/** How many past-due occurrences a missed-run policy may run: none, the latest one, or up to maxCatchUp. */
export function catchUpQuota(policies: Pick<SchedulePolicies, 'missed' | 'maxCatchUp'>): number {
  return policies.missed === 'skip' ? 0 : policies.missed === 'once' ? 1 : policies.maxCatchUp;
}

export type OccurrenceAction = 'enqueue' | 'catch-up' | 'missed';

export interface PlannedOccurrence extends Occurrence {
  action: OccurrenceAction;
}

export interface PlanInput {
  rule: OccurrenceRule;
  policies: Pick<SchedulePolicies, 'missed' | 'catchUpWindowMs' | 'maxCatchUp'>;
  /** Nominal time (ms) of the last occurrence already dealt with; planning starts strictly after it. */
  cursor: number;
  now: number;
  /** An occurrence late by less than this is still run as a normal (on-time) occurrence. */
  graceMs: number;
  /** Occurrences due up to `now + lookaheadMs` are enqueued ahead, delayed to their exact time. */
  lookaheadMs: number;
  /** Bounds the work of one tick after a very long outage; the rest is planned on the next tick. */
  limit?: number;
  /**
   * The claim was taken over from a replica that died holding it (its lease expired, or a live scheduler
   * released it when it stopped beating). The occurrences that came due meanwhile are superseded by the
   * schedule's next run: the next occurrence within the look-ahead (run at its time) or, when none comes
   * that soon, the latest one due (run now, if within the grace period). The others are judged by the missed
   * policy, as after an outage, rather than all added at once (a burst of one schedule's runs, which its
   * overlap policy would skip but for one). The resuming run counts as one of the policy's catch-up runs:
   * 'once' runs only it. This is for a claim taken over within the grace period, as the registry does in
   * seconds: one whose first occurrence is already later than the grace (nobody took it over in time, as
   * when every scheduler was down) is an outage like any other, planned as a due entry found late would be,
   * so one outage is judged by one rule whether or not the last scheduler died holding the claim.
   */
  supersede?: boolean;
}

export interface Plan {
  items: PlannedOccurrence[];
  /** The new cursor: the last planned occurrence (unchanged when there is none). */
  cursor: number;
  /** More occurrences are due than `limit`; call again. */
  truncated: boolean;
}

export const PLAN_LIMIT = 5000;

/**
 * Pure: decides, for every occurrence after the cursor up to the look-ahead horizon, whether it is
 * enqueued, caught up or recorded as missed. Every occurrence gets exactly one of the three, so none is
 * silently lost. Catch-up picks the latest past-due occurrences inside the window (the freshest runs are
 * the useful ones; the older ones are in the history as `missed` for a manual replay).
 */
export function planOccurrences(input: PlanInput): Plan {
  const { rule, policies, cursor, now } = input;
  const found = occurrencesBetween(
    rule,
    new Date(cursor),
    new Date(now + input.lookaheadMs),
    input.limit ?? PLAN_LIMIT,
  );
  const lateBefore = now - input.graceMs;
  const windowStart = now - policies.catchUpWindowMs;
  // A truncated batch cannot know which past-due occurrences are the latest; settle only those older than
  // the window (missed whatever the policy) and leave the rest for the next call.
  const { truncated } = found;
  const outside = truncated ? found.occurrences.filter((o) => o.at.getTime() < windowStart) : [];
  const occurrences = outside.length > 0 ? outside : found.occurrences;
  const pastGrace = (o: Occurrence) => o.at.getTime() < lateBefore;
  let late = pastGrace;
  let resumes = false;
  // The first occurrence is the oldest: when it is not late by the grace, none is (a claim taken over in time).
  if (input.supersede && !(occurrences[0] && pastGrace(occurrences[0]))) {
    // A taken-over claim: what came due is late, but for the latest one when no later one is in the look-ahead.
    const due = occurrences.filter((o) => o.at.getTime() <= now);
    const keep = !truncated && due.length === occurrences.length ? due.at(-1) : undefined; // a truncated batch's last is not the latest
    late = (o) => o.at.getTime() <= now && o !== keep;
    resumes = due.length > 0 && occurrences.some((o) => !late(o));
  }
  const pastDue = occurrences.filter(late);
  const eligible = pastDue.filter((o) => o.at.getTime() >= windowStart);
  const quota = catchUpQuota(policies) - (resumes ? 1 : 0);
  const caughtUp = new Set(quota > 0 ? eligible.slice(-quota) : []);
  const items = occurrences.map((o): PlannedOccurrence => {
    if (!late(o)) return { ...o, action: 'enqueue' };
    return { ...o, action: caughtUp.has(o) ? 'catch-up' : 'missed' };
  });
  const last = items.at(-1);
  return { items, cursor: last ? last.at.getTime() : cursor, truncated };
}
