import { lastOutcomes, previewSchedule, scheduleRegistryKey, type SchedulePreview } from '@tickwork/runtime';
import type { Command } from './command.js';
import { integerFlag } from '../flags.js';
import { table } from '../table.js';
import { UsageError } from '../usage-error.js';

interface ScheduleRow extends SchedulePreview {
  /** Whether a scheduler has registered it in Redis (null when Redis could not be asked). */
  registered: boolean | null;
  lastSuccess: string | null;
  lastFailure: string | null;
}

export const schedulesCommand: Command = {
  name: 'schedules',
  usage: 'tickwork schedules [--count N] [--from ISO-time] [--json]',
  summary: 'List each schedule: pattern, tz, policies, next N fire times (tz and UTC, DST marked), registration.',
  valueFlags: ['count', 'from'],
  async run(ctx) {
    const count = integerFlag(ctx.flags, 'count', { min: 1, max: 100 }) ?? 5;
    const from = ctx.flags.from === undefined ? new Date() : new Date(String(ctx.flags.from));
    if (Number.isNaN(from.getTime())) {
      throw new UsageError(`--from must be an ISO date or time, e.g. 2026-03-07T00:00:00Z, got ${JSON.stringify(ctx.flags.from)}`);
    }
    const redis = ctx.redis();
    const registry = await redis.hgetall(scheduleRegistryKey(ctx.env.QUEUE_PREFIX));
    const rows: ScheduleRow[] = [];
    for (const job of ctx.catalog.scheduled()) {
      const last = await lastOutcomes(redis, ctx.env.QUEUE_PREFIX, job.name);
      rows.push({
        ...previewSchedule(job, { count, from }),
        registered: job.name in registry,
        lastSuccess: last.lastSuccess?.nominal ?? null,
        lastFailure: last.lastFailure?.nominal ?? null,
      });
    }
    ctx.out.result(rows, () => rows.map(render).join('\n\n') || 'no scheduled jobs in the catalog');
  },
};

function render(r: ScheduleRow): string {
  const p = r.policies;
  const header = [
    `${r.name}  (queue ${r.queue})  ${r.spec}  tz ${r.tz}${r.registered ? '' : '  [not registered: start the scheduler]'}`,
    `  dst gap=${p.dst.gap} fold=${p.dst.fold}  missed=${p.missed} window=${p.catchUpWindowMs / 1000}s maxCatchUp=${p.maxCatchUp}  overlap=${p.overlap}` +
      `  last success ${r.lastSuccess ?? '-'}  last failure ${r.lastFailure ?? '-'}`,
  ];
  const body = table(
    ['LOCAL', 'UTC', 'NOTE'],
    r.next.map((o) => [
      o.local,
      o.utc,
      [o.dstTransition && `DST ${o.dstTransition.from} -> ${o.dstTransition.to}`, o.kind !== 'regular' && o.kind].filter(Boolean).join('; '),
    ]),
  );
  return [...header, ...body.split('\n').map((l) => `  ${l}`)].join('\n');
}
