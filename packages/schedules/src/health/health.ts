import type { RedisClient } from '@tickwork/core';
import type { AnyJob } from '@tickwork/core';
import { effectiveRule } from '../rules/effective-rule.js';
import { lastOutcomes, type OccurrenceRecord } from '../history/history.js';
import { scheduleKeys } from '../keys.js';
import { previousOccurrences, type OccurrenceRule } from '../rules/occurrences.js';

/**
 * - `failing`: the latest finished run failed (takes precedence: it is the actionable one);
 * - `stale`: no success within twice the schedule's interval before its last expected occurrence;
 * - `waiting`: nothing has succeeded yet, but the schedule is too new to call stale;
 * - `ok`.
 */
export type HealthStatus = 'ok' | 'failing' | 'stale' | 'waiting';

export interface ScheduleHealth {
  status: HealthStatus;
  stale: boolean;
  failing: boolean;
  /** One sentence for the page, saying why. */
  reason: string;
  /** ISO UTC of the latest occurrence due before now (null if the pattern never fired yet). */
  lastExpected: string | null;
  /** Spacing of the last two expected occurrences (the interval `stale` is measured in). */
  intervalMs: number | null;
}

export interface HealthInput {
  rule: OccurrenceRule;
  lastSuccess: OccurrenceRecord | null;
  lastFailure: OccurrenceRecord | null;
  /** Nominal time (ISO) of the oldest occurrence in the history: how long the schedule has been running. */
  firstSeen: string | null;
  now: Date;
}

/** When an outcome happened: its end, or its nominal time for records written without one. */
function outcomeMs(r: OccurrenceRecord): number {
  return Date.parse(r.endedAt ?? r.nominal);
}

export function scheduleHealth({ rule, lastSuccess, lastFailure, firstSeen, now }: HealthInput): ScheduleHealth {
  const [before, last] = previousOccurrences(rule, now, 2);
  const lastExpected = last ? last.at.toISOString() : null;
  const intervalMs = before && last ? last.at.getTime() - before.at.getTime() : null;
  const failing = lastFailure !== null && (lastSuccess === null || outcomeMs(lastFailure) > outcomeMs(lastSuccess));

  let stale = false;
  let waiting = false;
  let staleReason = '';
  if (last && intervalMs !== null) {
    const windowStart = last.at.getTime() - 2 * intervalMs;
    if (lastSuccess) {
      stale = outcomeMs(lastSuccess) < windowStart;
      staleReason = `last success ${lastSuccess.endedAt ?? lastSuccess.nominal} is more than 2 intervals before the last expected run ${lastExpected}`;
    } else if (firstSeen !== null && Date.parse(firstSeen) <= windowStart) {
      stale = true;
      staleReason = `no success since its first occurrence ${firstSeen}`;
    } else {
      waiting = true;
    }
  } else if (!lastSuccess) {
    waiting = true;
  }

  if (failing) {
    return { status: 'failing', stale, failing, reason: `last run failed: ${lastFailure?.error ?? 'no error recorded'}`, lastExpected, intervalMs };
  }
  if (stale) return { status: 'stale', stale, failing, reason: staleReason, lastExpected, intervalMs };
  if (waiting) return { status: 'waiting', stale, failing, reason: 'no successful run yet', lastExpected, intervalMs };
  return { status: 'ok', stale, failing, reason: 'last run succeeded', lastExpected, intervalMs };
}

/** The least `slowAfter` defaults to: a schedule firing every few seconds still gets a minute. */
export const MIN_SLOW_AFTER_MS = 60_000;

/**
 * How long a run may go before it counts as slow: the schedule's `slowAfter`, else its interval (a run
 * that outlasts it collides with the next occurrence), at least MIN_SLOW_AFTER_MS. One rule for the
 * watchdog's alert and the dashboard's marker.
 */
export function slowAfterMsOf(policies: { slowAfterMs: number | null }, intervalMs: number | null): number {
  return policies.slowAfterMs ?? Math.max(intervalMs ?? 0, MIN_SLOW_AFTER_MS);
}

export interface ScheduleState {
  rule: OccurrenceRule;
  lastSuccess: OccurrenceRecord | null;
  lastFailure: OccurrenceRecord | null;
  health: ScheduleHealth;
}

/**
 * A schedule's health as Redis has it now: its last outcomes and the age of its history, judged against
 * the rule it fires on (`speedupMs`: the fast staging interval when one is in force). Shared by the
 * dashboard and the scheduler's watchdog, so both call the same schedule stale at the same moment.
 */
export async function loadScheduleState(
  redis: RedisClient,
  prefix: string,
  job: AnyJob,
  speedupMs: number | null | undefined,
  now = new Date(),
): Promise<ScheduleState> {
  const rule = effectiveRule(job, speedupMs);
  const { lastSuccess, lastFailure } = await lastOutcomes(redis, prefix, job.name);
  const oldest = await redis.zrange(scheduleKeys(prefix, job.name).history, '0', '0', 'WITHSCORES');
  const firstSeen = oldest[1] === undefined ? null : new Date(Number(oldest[1])).toISOString();
  return { rule, lastSuccess, lastFailure, health: scheduleHealth({ rule, lastSuccess, lastFailure, firstSeen, now }) };
}
