import type { MissedPolicy, OverlapPolicy } from '@tickwork/core';
import type { ScheduleInput } from '@tickwork/schedules';
import type { CommandContext } from '../context.js';
import { durationFlag } from '../duration-flag.js';
import { integerFlag } from '../flags.js';
import { readPayloadSource } from '../payload-source.js';
import { UsageError } from '../usage-error.js';
import { occurrenceText } from './render.js';
import { idArg, stringFlag, type Subcommand } from './subcommand.js';

/**
 * The definition from the flags. Only the shape is checked here (one of --pattern/--every, JSON data);
 * the API checks the rest (job, pattern, tz, data against the job's schema, policies) and names the field.
 */
export async function inputFromFlags(ctx: CommandContext): Promise<ScheduleInput> {
  const job = stringFlag(ctx, 'job', true) ?? '';
  const pattern = stringFlag(ctx, 'pattern');
  const every = durationFlag(ctx.flags, 'every');
  if ((pattern === undefined) === (every === undefined)) throw new UsageError('give exactly one of --pattern <cron> and --every <duration>');
  const tz = stringFlag(ctx, 'tz');
  if (tz === undefined) throw new UsageError('--tz is required, e.g. --tz UTC or --tz Europe/Berlin (an IANA timezone)');
  const dataSource = stringFlag(ctx, 'data');
  let data: unknown;
  if (dataSource !== undefined) {
    const raw = await readPayloadSource(dataSource);
    try {
      data = JSON.parse(raw);
    } catch (err) {
      throw new UsageError(`--data is not valid JSON (${(err as Error).message}); quote it, e.g. --data '{"userId":"u1"}'`);
    }
  }
  const gap = stringFlag(ctx, 'dst-gap');
  const fold = stringFlag(ctx, 'dst-fold');
  const catchUpWindow = durationFlag(ctx.flags, 'catch-up-window');
  const slowAfter = durationFlag(ctx.flags, 'slow-after');
  const spread = durationFlag(ctx.flags, 'spread');
  const maxCatchUp = integerFlag(ctx.flags, 'max-catch-up', { min: 1 });
  const history = integerFlag(ctx.flags, 'history', { min: 1 });
  const missed = stringFlag(ctx, 'missed');
  const overlap = stringFlag(ctx, 'overlap');
  const rule = pattern !== undefined ? { pattern } : { every: every ?? {} };
  // Policy names go through as typed: an unknown one is the API's error, which lists the valid ones.
  return {
    job,
    tz,
    ...rule,
    ...(data !== undefined && { data }),
    ...((gap !== undefined || fold !== undefined) && { dst: { ...(gap && { gap: gap as 'shift' }), ...(fold && { fold: fold as 'once' }) } }),
    ...(missed !== undefined && { missed: missed as MissedPolicy }),
    ...(overlap !== undefined && { overlap: overlap as OverlapPolicy }),
    ...(catchUpWindow !== undefined && { catchUpWindow }),
    ...(maxCatchUp !== undefined && { maxCatchUp }),
    ...(slowAfter !== undefined && { slowAfter }),
    ...(spread !== undefined && { spread }),
    ...(history !== undefined && { history }),
    ...(ctx.flags.watch === true && { watch: true }),
  };
}

export const add: Subcommand = {
  usage:
    'tickwork schedules add <id> --job <job> (--pattern <cron> | --every <duration>) --tz <IANA tz> [--data <json>|@<file>|-] ' +
    '[--missed skip|once|all] [--catch-up-window <duration>] [--max-catch-up <n>] [--overlap skip|allow|buffer-one] ' +
    '[--dst-gap shift|skip] [--dst-fold once|twice] [--slow-after <duration>] [--spread <duration>] [--watch] [--history <n>] [--json]',
  summary: 'Create or change a runtime schedule (the same definition again changes nothing).',
  valueFlags: ['job', 'pattern', 'every', 'tz', 'data', 'missed', 'catch-up-window', 'max-catch-up', 'overlap', 'dst-gap', 'dst-fold', 'slow-after', 'spread', 'history'],
  booleanFlags: ['watch'],
  async run(ctx, args) {
    const id = idArg(args);
    const input = await inputFromFlags(ctx);
    const r = await ctx.schedules().upsert(id, input);
    const verdict = r.created ? 'created' : r.changed ? 'changed' : 'unchanged';
    // The same definition again changes nothing, and is not an action to record.
    if (verdict !== 'unchanged') await ctx.audit('schedules add', { id, job: input.job as string, result: verdict });
    const next = r.next?.toISOString() ?? null;
    ctx.out.result({ id, result: verdict, created: r.created, changed: r.changed, next }, () => {
      const note = verdict === 'changed' ? ' (the new definition applies from the next occurrence)' : verdict === 'unchanged' ? ' (same definition: nothing touched)' : '';
      return `${verdict} schedule ${id}${note}\nnext occurrence ${occurrenceText(r.next, input.tz)}`;
    });
  },
};
