import { CronExpressionParser } from 'cron-parser';
import { Duration, IANAZone } from 'luxon';
import type { ScheduleSpec } from './define-job.js';
import { JobDefinitionError } from '../errors.js';
import { boundedCache } from '../bounded-cache.js';
import { policiesOf } from './schedule-policy.js';

/**
 * What validating a zone and a pattern found, by value: a million runtime schedules use few distinct ones,
 * and each check is costly (luxon builds an Intl formatter per zone check; cron-parser parses the pattern).
 */
const zoneValid = boundedCache<boolean>(10_000);
const patternError = boundedCache<string | null>(10_000);

function cronError(pattern: string): string | null {
  try {
    CronExpressionParser.parse(pattern, { tz: 'UTC', strict: false });
    return null;
  } catch (err) {
    return (err as Error).message;
  }
}

/** Throws a JobDefinitionError naming the job and the bad value. */
export function validateSchedule(jobName: string, spec: ScheduleSpec): void {
  if (!spec.tz || typeof spec.tz !== 'string' || !zoneValid(spec.tz, () => IANAZone.isValidZone(spec.tz))) {
    throw new JobDefinitionError(
      jobName,
      `schedule.tz ${JSON.stringify(spec.tz)} is not an IANA timezone; use e.g. "UTC" or "America/New_York"`,
    );
  }
  if (spec.pattern !== undefined && spec.every !== undefined) {
    throw new JobDefinitionError(jobName, 'schedule has both pattern and every; choose one');
  }
  if (spec.pattern !== undefined) {
    const error = typeof spec.pattern === 'string' ? patternError(spec.pattern, () => cronError(spec.pattern as string)) : 'not a string';
    if (error !== null) {
      throw new JobDefinitionError(
        jobName,
        `schedule.pattern ${JSON.stringify(spec.pattern)} is not a valid cron expression ` +
          `(${error}); expected 5 or 6 fields, e.g. "0 0 1 * *"`,
      );
    }
    policiesOf(jobName, spec);
    return;
  }
  if (spec.every !== undefined) {
    everyMs(jobName, spec);
    policiesOf(jobName, spec);
    return;
  }
  throw new JobDefinitionError(jobName, 'schedule needs a cron pattern or an every interval');
}

export function everyMs(jobName: string, spec: ScheduleSpec): number {
  let ms = Number.NaN;
  try {
    ms = Duration.fromDurationLike(spec.every ?? {}).toMillis();
  } catch {
    // reported below
  }
  if (!Number.isFinite(ms) || ms < 1000) {
    throw new JobDefinitionError(
      jobName,
      `schedule.every ${JSON.stringify(spec.every)} is not a duration of at least 1 second; use e.g. { minutes: 30 }`,
    );
  }
  return ms;
}
