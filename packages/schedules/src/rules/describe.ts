import type { AnyJob } from '@tickwork/core';
import { everyMs } from '@tickwork/core';

/** Human-readable form of a job's schedule, for logs, the CLI and the dashboard; its tz is shown beside it. */
export function describeSchedule(job: AnyJob): string {
  const spec = job.schedule;
  if (!spec) return '(on demand)';
  if (spec.pattern !== undefined) return `cron "${spec.pattern}"`;
  return `every ${everyMs(job.name, spec) / 1000}s`;
}
