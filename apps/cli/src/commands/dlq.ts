import { dlqListing, DlqQueryError, getDlqItem, parseDlqListQuery, purgeAllDeadLetters, purgeDeadLetters, redriveAllDeadLetters, redriveDeadLetters, type BulkOutcome, type BulkProgress, DRY_RUN, type DlqListing } from '@tickwork/operations';
import { knownQueues } from '@tickwork/core';
import type { CommandContext } from '../context.js';
import type { Command } from './command.js';
import { table } from '../table.js';
import { UsageError } from '../usage-error.js';
import { integerFlag } from '../flags.js';

const USAGE = [
  'tickwork dlq list [--queue <q>] [--name <job>] [--reason <text>] [--since <iso>] [--until <iso>] [--limit <n>] [--cursor <c>] [--json]',
  '       tickwork dlq show --queue <q> --job <dlq id> [--json]',
  '       tickwork dlq redrive --queue <q> (--job <dlq id>[,<dlq id>...] | --all [--batches <n>]) [--dry-run] [--json]',
  '       tickwork dlq purge --queue <q> (--job <dlq id>[,<dlq id>...] | --all [--batches <n>]) [--dry-run] [--json]',
].join('\n');

/** Queues the platform knows: the catalog's and every queue ever registered in Redis (jobs since removed). */
async function allQueues(ctx: CommandContext): Promise<string[]> {
  return [...new Set([...ctx.catalog.queues, ...(await knownQueues(ctx.redis(), ctx.env.QUEUE_PREFIX))])].sort();
}

async function requireQueue(ctx: CommandContext, required: boolean): Promise<string | undefined> {
  const queue = ctx.flags.queue;
  if (queue === undefined) {
    if (required) throw new UsageError(`--queue is required; known queues: ${(await allQueues(ctx)).join(', ') || '(none)'}`);
    return undefined;
  }
  if (typeof queue !== 'string' || queue === '') throw new UsageError('--queue needs a queue name');
  const known = await allQueues(ctx);
  if (!known.includes(queue)) throw new UsageError(`unknown queue "${queue}"; known queues: ${known.join(', ') || '(none)'}`);
  return queue;
}

/** --all works in batches of DLQ_BATCH_SIZE; --batches stops after that many (run again to continue). */
function bulkOptions(ctx: CommandContext, queue: string, dryRun: boolean, verb: string) {
  const maxBatches = integerFlag(ctx.flags, 'batches', { min: 1 });
  return { queues: ctx.queues(), queue, dryRun, onBatch: progressLine(dryRun ? 'examined' : verb), ...(maxBatches !== undefined && { maxBatches }) };
}

/** The ids of --job, or 'all' for --all. */
function selector(ctx: CommandContext): { ids: string[] } | 'all' {
  const job = ctx.flags.job;
  const all = ctx.flags.all === true;
  if (all && job !== undefined) throw new UsageError('give either --job or --all, not both');
  if (all) return 'all';
  if (ctx.flags.batches !== undefined) throw new UsageError('--batches goes with --all');
  if (typeof job !== 'string' || job.trim() === '') {
    throw new UsageError('say which entries: --job <dlq id> (see `tickwork dlq list`) or --all');
  }
  return { ids: job.split(',').map((s) => s.trim()).filter(Boolean) };
}

const LIST_FLAGS = ['queue', 'name', 'reason', 'since', 'until', 'limit', 'cursor'] as const;

async function list(ctx: CommandContext): Promise<DlqListing> {
  const raw: Record<string, string | undefined> = {};
  for (const f of LIST_FLAGS) {
    const v = ctx.flags[f];
    if (v === '') throw new UsageError(`--${f} needs a value`);
    raw[f] = typeof v === 'string' ? v : undefined;
  }
  try {
    return await dlqListing(ctx.queues(), await allQueues(ctx), parseDlqListQuery(raw));
  } catch (err) {
    if (err instanceof DlqQueryError) throw new UsageError(err.message);
    throw err;
  }
}

/** Progress of an --all run, one line per batch on stderr (stdout keeps the result, --json or not). */
function progressLine(verb: string): (p: BulkProgress) => void {
  return (p) => process.stderr.write(`${verb} ${p.done} of ${p.total} in ${p.queue}.dlq${p.skipped > 0 ? ` (${p.skipped} left in place)` : ''}\n`);
}

function bulkText(verb: string, dryRun: boolean, o: BulkOutcome): string {
  const lines = [dryRun ? `dry run: examined ${o.skipped} of ${o.total} in ${o.queue}.dlq, changed nothing` : `${verb} ${o.done} of ${o.total}; ${o.remaining} left in ${o.queue}.dlq`];
  const notable = o.skippedItems.filter((s) => s.reason !== DRY_RUN);
  for (const s of notable) lines.push(`skipped ${s.dlqJobId}: ${s.reason}`);
  if (!dryRun && o.skipped > notable.length) lines.push(`... and ${o.skipped - notable.length} more skipped`);
  if (!o.finished) lines.push('stopped after --batches: run the same command again to continue');
  return lines.join('\n');
}

export const dlqCommand: Command = {
  name: 'dlq',
  usage: USAGE,
  summary: 'Dead-letter queues: list, show, redrive or purge failed jobs.',
  valueFlags: ['queue', 'job', 'batches', 'name', 'reason', 'since', 'until', 'limit', 'cursor'],
  booleanFlags: ['all', 'dry-run'],
  async run(ctx) {
    const [sub] = ctx.args;
    const dryRun = ctx.flags['dry-run'] === true;
    switch (sub) {
      case 'list': {
        const page = await list(ctx);
        ctx.out.result(page, () => {
          const lines = page.entries.length === 0
            ? [page.scanned > 0 ? `no matching dead letters among ${page.scanned} examined` : 'no dead letters']
            : [table(
                ['QUEUE', 'DLQ ID', 'JOB', 'ATTEMPTS', 'LAST FAILED (UTC)', 'REASON'],
                page.entries.map((r) => [r.queue, r.dlqJobId, r.job, String(r.attempts), r.lastFailedAt, r.reason.split('\n')[0]?.slice(0, 80) ?? '']),
              )];
          // The filter examines a bounded window per call; the cursor continues the scan.
          if (page.next !== null) lines.push(`more: add --cursor ${page.next}${page.windowFull ? ` (the filter examined ${page.scanned} entries, its limit per call)` : ''}`);
          return lines.join('\n');
        });
        return;
      }
      case 'show': {
        const queue = (await requireQueue(ctx, true)) ?? '';
        const id = ctx.flags.job;
        if (typeof id !== 'string' || id === '') throw new UsageError('--job <dlq id> is required; see `tickwork dlq list`');
        const dl = await getDlqItem(ctx.queues(), queue, id);
        ctx.out.result(dl, () => JSON.stringify(dl, null, 2));
        return;
      }
      case 'redrive': {
        const queue = (await requireQueue(ctx, true)) ?? '';
        const which = selector(ctx);
        if (which === 'all') {
          const out = await redriveAllDeadLetters({ ...bulkOptions(ctx, queue, dryRun, 're-drove'), catalog: ctx.catalog });
          if (!dryRun) await ctx.audit('dlq redrive --all', { queue, done: out.done, skipped: out.skipped || undefined, remaining: out.remaining });
          ctx.out.result({ dryRun, ...out }, () => bulkText('re-drove', dryRun, out));
          return;
        }
        const outcomes = await redriveDeadLetters({ queues: ctx.queues(), queue, selector: which, catalog: ctx.catalog, dryRun });
        const redriven = outcomes.filter((o) => o.redriven);
        if (redriven.length > 0) await ctx.audit('dlq redrive', { queue, ids: redriven.map((o) => o.dlqJobId).join(','), newJobIds: redriven.map((o) => o.newJobId).join(',') });
        ctx.out.result({ dryRun, redriven: outcomes }, () =>
          outcomes.length === 0
            ? 'nothing to re-drive'
            : outcomes
                .map((o) =>
                  o.refused
                    ? `skipped ${o.dlqJobId}: ${o.refused}`
                    : `${dryRun ? 'would re-drive' : 're-drove'} ${o.dlqJobId} (${o.jobName}) as ${o.newJobId}, key ${o.idempotencyKey}`,
                )
                .join('\n'),
        );
        return;
      }
      case 'purge': {
        const queue = (await requireQueue(ctx, true)) ?? '';
        const which = selector(ctx);
        if (which === 'all') {
          const out = await purgeAllDeadLetters(bulkOptions(ctx, queue, dryRun, 'purged'));
          if (!dryRun) await ctx.audit('dlq purge --all', { queue, done: out.done, remaining: out.remaining });
          ctx.out.result({ dryRun, ...out }, () => bulkText('purged', dryRun, out));
          return;
        }
        const purged = await purgeDeadLetters({ queues: ctx.queues(), queue, selector: which, dryRun });
        const gone = purged.filter((p) => p.purged);
        if (gone.length > 0) await ctx.audit('dlq purge', { queue, ids: gone.map((p) => p.dlqJobId).join(',') });
        ctx.out.result({ dryRun, purged }, () =>
          purged.length === 0 ? 'nothing to purge' : purged.map((p) => `${dryRun ? 'would purge' : 'purged'} ${p.dlqJobId} (${p.jobName})`).join('\n'),
        );
        return;
      }
      default:
        throw new UsageError(sub ? `unknown dlq action "${sub}"; use list, show, redrive or purge` : 'missing action: list, show, redrive or purge');
    }
  },
};
