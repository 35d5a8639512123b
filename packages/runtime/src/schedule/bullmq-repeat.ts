import type { RepeatOptions } from 'bullmq';
import type { AnyJob } from '../define-job.js';
import { everyMs } from './validate.js';

/** The BullMQ repeat options for a job's schedule, always with its explicit timezone. */
export function repeatOptionsOf(job: AnyJob): Omit<RepeatOptions, 'key'> {
  const spec = job.schedule;
  if (!spec) throw new Error(`job "${job.name}" has no schedule`);
  if (spec.pattern !== undefined) return { pattern: spec.pattern, tz: spec.tz };
  return { every: everyMs(job.name, spec), tz: spec.tz };
}

/** Human-readable form for logs and the CLI. */
export function describeSchedule(job: AnyJob): string {
  const spec = job.schedule;
  if (!spec) return '(on demand)';
  if (spec.pattern !== undefined) return `cron "${spec.pattern}" ${spec.tz}`;
  return `every ${everyMs(job.name, spec) / 1000}s`;
}
