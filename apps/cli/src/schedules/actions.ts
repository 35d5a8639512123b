import { CatalogScheduleError, readHistory, ScheduleNotFoundError, type ListQuery, type ScheduleSource, type ScheduleView } from '@tickwork/schedules';
import type { CommandContext } from '../context.js';
import { integerFlag } from '../flags.js';
import { UsageError } from '../usage-error.js';
import { add } from './add.js';
import { copy } from './copy.js';
import { listTable, removedText, showText } from './render.js';
import { idArg, stringFlag, type Subcommand } from './subcommand.js';

async function requireSchedule(ctx: CommandContext, id: string): Promise<ScheduleView> {
  const view = await ctx.schedules().get(id);
  if (!view) throw new ScheduleNotFoundError(id);
  return view;
}

const SOURCES: readonly ScheduleSource[] = ['catalog', 'runtime'];

const ls: Subcommand = {
  usage: 'tickwork schedules ls [--job <job>] [--prefix <id prefix>] [--source catalog|runtime] [--cursor <c>] [--limit <n>] [--json]',
  summary: 'One page of schedules (catalog and runtime), ordered by id; prints the cursor of the next page.',
  valueFlags: ['job', 'prefix', 'source', 'cursor', 'limit'],
  async run(ctx, args) {
    if (args.length > 0) throw new UsageError(`ls takes no arguments, got ${JSON.stringify(args[0])}; filter with --prefix or --job`);
    const source = stringFlag(ctx, 'source');
    if (source !== undefined && !SOURCES.includes(source as ScheduleSource)) throw new UsageError(`--source must be catalog or runtime, got ${JSON.stringify(source)}`);
    const query: ListQuery = {
      job: stringFlag(ctx, 'job'),
      prefix: stringFlag(ctx, 'prefix'),
      source: source as ScheduleSource | undefined,
      cursor: stringFlag(ctx, 'cursor') ?? null,
      limit: integerFlag(ctx.flags, 'limit', { min: 1, max: 500 }) ?? 50,
    };
    // One page only, however many schedules exist: the next one is asked for with its cursor.
    const page = await ctx.schedules().list(query);
    ctx.out.result(page, () => {
      const lines = [page.items.length === 0 ? (query.cursor ? 'no more schedules' : 'no matching schedules') : listTable(page.items)];
      if (page.cursor !== null) lines.push(`more: add --cursor ${page.cursor}`);
      return lines.join('\n');
    });
  },
};

const show: Subcommand = {
  usage: 'tickwork schedules show <id> [--history <n>] [--json]',
  summary: 'One schedule: definition, policies, paused state, next occurrence and recent history.',
  valueFlags: ['history'],
  async run(ctx, args) {
    const id = idArg(args);
    const rows = integerFlag(ctx.flags, 'history', { min: 0, max: 500 }) ?? 10;
    const view = await ctx.schedules().get(id);
    const history = async () => (rows === 0 ? [] : await readHistory(ctx.redis(), ctx.env.QUEUE_PREFIX, id, rows));
    if (view) {
      const h = await history();
      return ctx.out.result({ ...view, history: h }, () => showText(view, h));
    }
    // Removed, its history still kept for 30 days: shown, marked as removed.
    const removed = await ctx.schedules().getRemoved(id);
    if (!removed) throw new ScheduleNotFoundError(id);
    const h = await history();
    ctx.out.result({ ...removed.definition, id, removed: { at: removed.removedAt, historyExpiresAt: removed.expiresAt }, history: h }, () => removedText(removed, h));
  },
};

const rm: Subcommand = {
  usage: 'tickwork schedules rm <id> [--json]',
  summary: 'Remove a runtime schedule and its pending occurrence (a catalog schedule is removed from the code).',
  valueFlags: [],
  async run(ctx, args) {
    const id = idArg(args);
    // Said before asking the store: a catalog schedule not yet stored by a scheduler is still code.
    if (ctx.catalog.get(id)?.schedule) throw new CatalogScheduleError(id, 'remove');
    if (!(await ctx.schedules().remove(id))) throw new ScheduleNotFoundError(id);
    await ctx.audit('schedules rm', { id });
    ctx.out.result({ id, removed: true }, () => `removed schedule ${id}`);
  },
};

const pause: Subcommand = {
  usage: 'tickwork schedules pause <id> --reason <text> [--json]',
  summary: 'Pause a schedule: its occurrences are recorded as skipped-paused until it is resumed.',
  valueFlags: ['reason'],
  async run(ctx, args) {
    const id = idArg(args);
    const reason = stringFlag(ctx, 'reason');
    if (reason === undefined) throw new UsageError('--reason is required: say why, for whoever finds it paused');
    if (await ctx.schedules().pause(id, reason)) {
      await ctx.audit('schedules pause', { id, reason });
      return ctx.out.result({ id, paused: true }, () => `paused schedule ${id}: ${reason}`);
    }
    // false: already paused, or (depending on the store) no such schedule; say which.
    const view = await requireSchedule(ctx, id);
    ctx.out.result({ id, paused: false, already: view.paused }, () => `schedule ${id} was already paused${view.paused ? ` since ${view.paused.at}: ${view.paused.reason}` : ''}; nothing changed`);
  },
};

const resume: Subcommand = {
  usage: 'tickwork schedules resume <id> [--json]',
  summary: 'Resume a paused schedule (paused occurrences are replayed only as its missed policy says).',
  valueFlags: [],
  async run(ctx, args) {
    const id = idArg(args);
    if (await ctx.schedules().resume(id)) {
      await ctx.audit('schedules resume', { id });
      return ctx.out.result({ id, resumed: true }, () => `resumed schedule ${id}`);
    }
    await requireSchedule(ctx, id);
    ctx.out.result({ id, resumed: false }, () => `schedule ${id} was not paused; nothing changed`);
  },
};

const run: Subcommand = {
  usage: 'tickwork schedules run <id> [--json]',
  summary: 'Run a schedule once now, with its own idempotency key; the next scheduled occurrence stays where it is.',
  valueFlags: [],
  async run(ctx, args) {
    const id = idArg(args);
    const r = await ctx.schedules().runNow(id, { by: 'cli' });
    await ctx.audit('schedules run', { id, jobId: r.jobId });
    ctx.out.result({ id, ...r }, () => `enqueued a run of ${id} now as job ${r.jobId}`);
  },
};

/** `tickwork schedules <action>`, in the order `--help` lists them. */
export const SCHEDULE_ACTIONS: Readonly<Record<string, Subcommand>> = { ls, show, add, rm, pause, resume, run, copy };
