import { loadScheduleOverviews, type ScheduleOverview } from '@tickwork/runtime';
import type { Command } from './command.js';
import { integerFlag } from '../flags.js';
import { table } from '../table.js';
import { UsageError } from '../usage-error.js';

export const schedulesCommand: Command = {
  name: 'schedules',
  usage: 'tickwork schedules [--count N] [--from ISO-time] [--json]',
  summary: 'List each schedule: pattern, tz, policies, registration, health, next N fire times (tz and UTC, DST marked).',
  valueFlags: ['count', 'from'],
  async run(ctx) {
    const count = integerFlag(ctx.flags, 'count', { min: 1, max: 100 }) ?? 5;
    const from = ctx.flags.from === undefined ? new Date() : new Date(String(ctx.flags.from));
    if (Number.isNaN(from.getTime())) {
      throw new UsageError(`--from must be an ISO date or time, e.g. 2026-03-07T00:00:00Z, got ${JSON.stringify(ctx.flags.from)}`);
    }
    // The dashboard's own rows: the same registration and health (judged now), fire times from --from.
    const rows = await loadScheduleOverviews(ctx.redis(), ctx.env.QUEUE_PREFIX, ctx.catalog, { count, from });
    ctx.out.result(rows, () => rows.map(render).join('\n\n') || 'no scheduled jobs in the catalog');
  },
};

function render(r: ScheduleOverview): string {
  const p = r.policies;
  const registration = r.registered ? `registered${r.speedupMs !== null ? ` (staging speed-up: every ${r.speedupMs / 1000}s)` : ''}` : 'not registered: start the scheduler';
  const header = [
    `${r.name}  (queue ${r.queue})  ${r.spec}  tz ${r.tz}`,
    `  ${registration}  health ${r.health.status}: ${r.health.reason}`,
    `  dst gap=${p.dst.gap} fold=${p.dst.fold}  missed=${p.missed} window=${p.catchUpWindowMs / 1000}s maxCatchUp=${p.maxCatchUp}  overlap=${p.overlap}` +
      `  last success ${r.lastSuccess?.nominal ?? '-'}  last failure ${r.lastFailure?.nominal ?? '-'}`,
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
