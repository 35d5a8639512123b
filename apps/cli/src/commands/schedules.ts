import { loadScheduleOverviews, type ScheduleOverview } from '@tickwork/schedules';
import type { CommandContext } from '../context.js';
import type { Command } from './command.js';
import { integerFlag } from '../flags.js';
import { SCHEDULE_ACTIONS } from '../schedules/actions.js';
import { table } from '../table.js';
import { UsageError } from '../usage-error.js';

const OVERVIEW_USAGE = 'tickwork schedules [--count N] [--from ISO-time] [--json]';
const OVERVIEW_FLAGS = ['count', 'from'];
const actions = Object.entries(SCHEDULE_ACTIONS);

/**
 * Flags are parsed once for the whole command (main.ts), so each action checks it got only its own:
 * `rm x --reason y` is a mistake worth saying, not something to ignore.
 */
function checkFlags(ctx: CommandContext, allowed: readonly string[], what: string): void {
  for (const [name, value] of Object.entries(ctx.flags)) {
    if (name === 'json' || value === undefined || allowed.includes(name)) continue;
    throw new UsageError(`--${name} does not go with ${what}`);
  }
}

/** The first argument that is neither a flag nor a flag's value (`--job x add`: `add`). */
function firstPositional(args: readonly string[], valueFlags: readonly string[]): string | undefined {
  for (let i = 0; i < args.length; i++) {
    const a = args[i] ?? '';
    if (!a.startsWith('-')) return a;
    if (valueFlags.includes(a.slice(2))) i++;
  }
  return undefined;
}

/**
 * `tickwork schedules` alone is the catalog's overview (registration, health, next fire times), as it
 * always was; `tickwork schedules <action>` works on one schedule or a page of them through the schedule API.
 */
export const schedulesCommand: Command = {
  name: 'schedules',
  usage: [OVERVIEW_USAGE, ...actions.map(([, a]) => a.usage)].join('\n       '),
  summary: 'Catalog schedules with health and next fire times; ls|show|add|rm|pause|resume|run for any schedule.',
  valueFlags: [...new Set([...OVERVIEW_FLAGS, ...actions.flatMap(([, a]) => a.valueFlags)])],
  booleanFlags: [...new Set(actions.flatMap(([, a]) => a.booleanFlags ?? []))],
  actionHelp(args) {
    const action = firstPositional(args, this.valueFlags ?? []);
    return action === undefined ? undefined : SCHEDULE_ACTIONS[action];
  },
  async run(ctx) {
    const [action, ...args] = ctx.args;
    if (action !== undefined) {
      const sub = SCHEDULE_ACTIONS[action];
      if (!sub) throw new UsageError(`unknown schedules action "${action}"; use ${Object.keys(SCHEDULE_ACTIONS).join(', ')} (or none, for the catalog's overview)`);
      checkFlags(ctx, [...sub.valueFlags, ...(sub.booleanFlags ?? [])], `schedules ${action}`);
      return sub.run(ctx, args);
    }
    checkFlags(ctx, OVERVIEW_FLAGS, 'the schedules overview (did you mean `tickwork schedules ls`?)');
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
      `${p.spreadMs !== null ? `  spread=${p.spreadMs / 1000}s (+${r.spreadOffsetMs / 1000}s)` : ''}` +
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
