import { DateTime } from 'luxon';
import type { AnyJob } from '@tickwork/core';
import { describeSchedule } from './describe.js';
import { nextOccurrences, ruleOf, type OccurrenceKind, type OccurrenceRule } from './occurrences.js';
import { policiesOf, type SchedulePolicies } from '@tickwork/core';

export interface PreviewOccurrence {
  /** ISO UTC. */
  utc: string;
  /** ISO local time with offset, in the schedule's tz. */
  local: string;
  kind: OccurrenceKind;
  /** Set when the UTC offset differs from the previous occurrence's: a DST transition lies between. */
  dstTransition?: { from: string; to: string };
}

export interface SchedulePreview {
  name: string;
  queue: string;
  pattern: string | null;
  everyMs: number | null;
  tz: string;
  spec: string;
  policies: SchedulePolicies;
  /** With a `spread` window: how long after each pattern time it fires; the times in `next` include it. */
  spreadOffsetMs: number;
  next: PreviewOccurrence[];
}

/**
 * The next `count` fire times of a scheduled job, in its tz and UTC, with DST transitions and shifted or
 * doubled times marked. A plain function of the catalog (no Redis), for the CLI and the dashboard.
 */
export function previewSchedule(job: AnyJob, opts: { count?: number; from?: Date; rule?: OccurrenceRule } = {}): SchedulePreview {
  const spec = job.schedule;
  if (!spec) throw new Error(`job "${job.name}" has no schedule`);
  const rule = opts.rule ?? ruleOf(job.name, spec);
  const from = opts.from ?? new Date();
  const previousOffset = DateTime.fromJSDate(from, { zone: spec.tz }).offset;
  let lastOffset = previousOffset;
  const next = nextOccurrences(rule, from, opts.count ?? 5).map((o): PreviewOccurrence => {
    const local = DateTime.fromJSDate(o.at, { zone: spec.tz });
    const row: PreviewOccurrence = { utc: o.at.toISOString(), local: local.toISO() ?? '', kind: o.kind };
    if (local.offset !== lastOffset) {
      row.dstTransition = { from: formatOffset(lastOffset), to: formatOffset(local.offset) };
      lastOffset = local.offset;
    }
    return row;
  });
  return {
    name: job.name,
    queue: job.queue,
    pattern: rule.kind === 'cron' ? rule.pattern : null,
    everyMs: rule.kind === 'every' ? rule.everyMs : null,
    tz: spec.tz,
    spec: describeSchedule(job),
    policies: policiesOf(job.name, spec),
    spreadOffsetMs: rule.offsetMs ?? 0,
    next,
  };
}

function formatOffset(minutes: number): string {
  const sign = minutes < 0 ? '-' : '+';
  const abs = Math.abs(minutes);
  return `UTC${sign}${String(Math.floor(abs / 60)).padStart(2, '0')}:${String(abs % 60).padStart(2, '0')}`;
}
