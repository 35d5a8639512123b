import { Duration } from 'luxon';
import type { DstPolicy, MissedPolicy, ScheduleSpec } from './define-job.js';
import { JobDefinitionError } from '../errors.js';
import { MAX_SPREAD_MS } from './spread.js';
import { DEFAULT_OVERLAP_POLICY, validateOverlapPolicy, type OverlapPolicy } from './overlap-policy.js';

/** A daily job should run exactly once per local day: shift a nonexistent time, run an ambiguous one once. */
export const DEFAULT_DST: Readonly<DstPolicy> = Object.freeze({ gap: 'shift', fold: 'once' });
export const DEFAULT_MISSED: MissedPolicy = 'skip';
export const DEFAULT_CATCH_UP_WINDOW_MS = 24 * 3600_000;
export const DEFAULT_MAX_CATCH_UP = 10;
export const MAX_CATCH_UP_LIMIT = 1000;

/** The policies of a schedule with every default filled in. */
export interface SchedulePolicies {
  dst: DstPolicy;
  missed: MissedPolicy;
  catchUpWindowMs: number;
  maxCatchUp: number;
  overlap: OverlapPolicy;
  /** Set when the schedule gives `slowAfter`; otherwise the watchdog uses the interval (at least a minute). */
  slowAfterMs: number | null;
  /** The `spread` window in ms (whole seconds), or null for none; the offset itself is `spreadOffsetMs`. */
  spreadMs: number | null;
}

const GAPS = ['shift', 'skip'] as const;
const FOLDS = ['once', 'twice'] as const;
const MISSED = ['skip', 'once', 'all'] as const;

/** Fills defaults and checks each value, throwing a JobDefinitionError that names the job and the field. */
export function policiesOf(jobName: string, spec: ScheduleSpec): SchedulePolicies {
  const dst = { ...DEFAULT_DST, ...spec.dst };
  if (!GAPS.includes(dst.gap)) {
    throw new JobDefinitionError(jobName, `schedule.dst.gap ${JSON.stringify(dst.gap)} must be "shift" or "skip"`);
  }
  if (!FOLDS.includes(dst.fold)) {
    throw new JobDefinitionError(jobName, `schedule.dst.fold ${JSON.stringify(dst.fold)} must be "once" or "twice"`);
  }
  const missed = spec.missed ?? DEFAULT_MISSED;
  if (!MISSED.includes(missed)) {
    throw new JobDefinitionError(jobName, `schedule.missed ${JSON.stringify(missed)} must be "skip", "once" or "all"`);
  }
  const catchUpWindowMs =
    spec.catchUpWindow === undefined ? DEFAULT_CATCH_UP_WINDOW_MS : positiveDurationMs(jobName, 'schedule.catchUpWindow', spec.catchUpWindow, '{ hours: 6 }');
  const slowAfterMs = spec.slowAfter === undefined ? null : positiveDurationMs(jobName, 'schedule.slowAfter', spec.slowAfter, '{ minutes: 10 }');
  const spreadMs = spreadMsOf(jobName, spec.spread);
  const maxCatchUp = spec.maxCatchUp ?? DEFAULT_MAX_CATCH_UP;
  if (!Number.isInteger(maxCatchUp) || maxCatchUp < 1 || maxCatchUp > MAX_CATCH_UP_LIMIT) {
    throw new JobDefinitionError(
      jobName,
      `schedule.maxCatchUp ${JSON.stringify(spec.maxCatchUp)} must be an integer from 1 to ${MAX_CATCH_UP_LIMIT}`,
    );
  }
  validateOverlapPolicy(jobName, spec.overlap);
  const overlap = spec.overlap ?? DEFAULT_OVERLAP_POLICY;
  return { dst, missed, catchUpWindowMs, maxCatchUp, overlap, slowAfterMs, spreadMs };
}

/** A job definition's duration field in ms; a JobDefinitionError naming the field unless it is a positive duration. */
export function positiveDurationMs(jobName: string, field: string, value: unknown, example: string): number {
  let ms: number;
  try {
    ms = Duration.fromDurationLike(value as Parameters<typeof Duration.fromDurationLike>[0]).toMillis();
  } catch {
    ms = Number.NaN;
  }
  if (!Number.isFinite(ms) || ms <= 0) {
    throw new JobDefinitionError(jobName, `${field} ${JSON.stringify(value)} is not a positive duration; use e.g. ${example}`);
  }
  return ms;
}

/** A schedule's `spread` window in ms, or null; a JobDefinitionError unless 1 second to 24 hours. */
function spreadMsOf(jobName: string, spread: unknown): number | null {
  if (spread === undefined) return null;
  const ms = positiveDurationMs(jobName, 'schedule.spread', spread, '{ minutes: 10 }');
  if (ms < 1000 || ms > MAX_SPREAD_MS) {
    throw new JobDefinitionError(jobName, `schedule.spread ${JSON.stringify(spread)} must be from 1 second to 24 hours; use e.g. { minutes: 10 }`);
  }
  return Math.floor(ms / 1000) * 1000;
}
