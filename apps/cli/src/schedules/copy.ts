import { createRedis, QueueSet, safeUrl, TickworkError } from '@tickwork/core';
import { createSchedules, type ScheduleInput, type Schedules, type ScheduleView } from '@tickwork/schedules';
import { UsageError } from '../usage-error.js';
import { stringFlag, type Subcommand } from './subcommand.js';

/** Schedules read per page from the source (the API's largest page). */
const PAGE = 500;

/** Some schedules could not be copied; the others were (each one is reported). */
export class ScheduleCopyError extends TickworkError {
  override readonly name = 'ScheduleCopyError';
}

/**
 * A stored schedule as the input that defines it again: every policy as stored (defaults included, so a
 * changed default on the target side cannot change the schedule), durations in milliseconds.
 */
export function inputOf(view: ScheduleView): ScheduleInput {
  const p = view.policies;
  const rule = view.pattern !== undefined ? { pattern: view.pattern } : { every: { milliseconds: view.everyMs ?? 0 } };
  return {
    job: view.job,
    tz: view.tz,
    ...rule,
    ...(view.data !== undefined && view.data !== null && { data: view.data as ScheduleInput['data'] }),
    dst: p.dst,
    missed: p.missed,
    catchUpWindow: { milliseconds: p.catchUpWindowMs },
    maxCatchUp: p.maxCatchUp,
    overlap: p.overlap,
    ...(p.slowAfterMs !== null && { slowAfter: { milliseconds: p.slowAfterMs } }),
    ...(p.spreadMs !== null && { spread: { milliseconds: p.spreadMs } }),
    watch: view.watch,
    history: view.historyCap,
  };
}

type Outcome = 'created' | 'changed' | 'unchanged';

/** Upserts one schedule (and its pause) on the target; throws what the target's API refused. */
async function copyOne(target: Schedules, view: ScheduleView): Promise<Outcome> {
  const r = await target.upsert(view.id, inputOf(view));
  if (view.paused) await target.pause(view.id, view.paused.reason);
  return r.created ? 'created' : r.changed ? 'changed' : 'unchanged';
}

/**
 * `tickwork schedules copy --from <redis-url>`: moving to a cluster (or to another Redis), the runtime
 * schedules of the old Redis are defined again here through the schedule API, page by page, so a million
 * of them never sit in memory at once. Catalog schedules are not copied: the scheduler writes them from
 * the code. Running it again changes nothing that is already equal, so it can be repeated until the old
 * side stops changing. One schedule the target refuses (e.g. its job is not in this catalog) is reported
 * and the others are still copied.
 */
export const copy: Subcommand = {
  usage: 'tickwork schedules copy --from <redis-url> [--prefix <id prefix>] [--json]',
  summary: "Define another Redis's runtime schedules here (moving to a cluster); equal ones are left as they are.",
  valueFlags: ['from', 'prefix'],
  async run(ctx, args) {
    if (args.length > 0) throw new UsageError(`copy takes no arguments, got ${JSON.stringify(args[0])}`);
    const from = stringFlag(ctx, 'from', true) ?? '';
    if (!/^rediss?:\/\//.test(from)) throw new UsageError('--from must be a redis:// or rediss:// URL of the Redis to copy from');
    const prefix = stringFlag(ctx, 'prefix');
    const source = createRedis(from, 'command');
    source.on('error', () => {}); // a failed command says what went wrong; the retries would only be noise
    const sourceQueues = new QueueSet(source, ctx.env.QUEUE_PREFIX, ctx.log);
    const counts: Record<Outcome | 'paused', number> = { created: 0, changed: 0, unchanged: 0, paused: 0 };
    const failed: { id: string; error: string }[] = [];
    try {
      const read = createSchedules({ redis: source, queues: sourceQueues, catalog: ctx.catalog, log: ctx.log });
      const target = ctx.schedules();
      let cursor: string | null = null;
      do {
        const page = await read.list({ source: 'runtime', limit: PAGE, cursor, ...(prefix !== undefined && { prefix }) });
        for (const view of page.items) {
          try {
            counts[await copyOne(target, view)] += 1;
            if (view.paused) counts.paused += 1;
          } catch (err) {
            failed.push({ id: view.id, error: err instanceof Error ? err.message : String(err) });
          }
        }
        cursor = page.cursor;
      } while (cursor !== null);
    } finally {
      await sourceQueues.close();
      source.disconnect();
    }
    if (counts.created + counts.changed > 0 || failed.length > 0) {
      await ctx.audit('schedules copy', { from: safeUrl(from), prefix, created: counts.created, changed: counts.changed, unchanged: counts.unchanged, failed: failed.length || undefined });
    }
    ctx.out.result({ ...counts, failed }, () =>
      [
        `copied runtime schedules: ${counts.created} created, ${counts.changed} changed, ${counts.unchanged} unchanged (${counts.paused} paused as on the source)`,
        ...failed.map((f) => `not copied: ${f.id}: ${f.error}`),
      ].join('\n'),
    );
    if (failed.length > 0) throw new ScheduleCopyError(`${failed.length} schedule(s) not copied (listed above); the others were`);
  },
};
