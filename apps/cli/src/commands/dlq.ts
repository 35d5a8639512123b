import {
  countDeadLetters,
  getDlqItem,
  knownQueues,
  listDlqItems,
  purgeDeadLetters,
  redriveDeadLetters,
  type DeadLetterSelector,
} from '@tickwork/runtime';
import type { CommandContext } from '../context.js';
import type { Command } from './command.js';
import { table } from '../table.js';
import { UsageError } from '../usage-error.js';

const USAGE = [
  'tickwork dlq list [--queue <q>] [--json]',
  '       tickwork dlq show --queue <q> --job <dlq id> [--json]',
  '       tickwork dlq redrive --queue <q> (--job <dlq id>[,<dlq id>...] | --all) [--dry-run] [--json]',
  '       tickwork dlq purge --queue <q> (--job <dlq id>[,<dlq id>...] | --all) [--dry-run] [--json]',
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

function selector(ctx: CommandContext): DeadLetterSelector {
  const job = ctx.flags.job;
  const all = ctx.flags.all === true;
  if (all && job !== undefined) throw new UsageError('give either --job or --all, not both');
  if (all) return { all: true };
  if (typeof job !== 'string' || job.trim() === '') {
    throw new UsageError('say which entries: --job <dlq id> (see `tickwork dlq list`) or --all');
  }
  return { ids: job.split(',').map((s) => s.trim()).filter(Boolean) };
}

export const dlqCommand: Command = {
  name: 'dlq',
  usage: USAGE,
  summary: 'Dead-letter queues: list, show, redrive or purge failed jobs.',
  valueFlags: ['queue', 'job'],
  booleanFlags: ['all', 'dry-run'],
  async run(ctx) {
    const [sub] = ctx.args;
    const dryRun = ctx.flags['dry-run'] === true;
    switch (sub) {
      case 'list': {
        const only = await requireQueue(ctx, false);
        const queues = only ? [only] : await allQueues(ctx);
        type Row = { queue: string; dlqJobId: string; job: string; reason: string; attemptsMade: number; lastFailedAt: string; redriveCount: number; tickwork: boolean };
        const rows: Row[] = [];
        for (const queue of queues) {
          if ((await countDeadLetters(ctx.queues(), queue)) === 0) continue;
          for (const d of await listDlqItems(ctx.queues(), queue)) {
            // A job something else put in the DLQ is listed (so it can be purged), never an error.
            const { dlqJobId } = d;
            rows.push(
              d.entry === null
                ? { queue, dlqJobId, job: d.foreign.name, reason: d.foreign.problem, attemptsMade: 0, lastFailedAt: d.foreign.addedAt, redriveCount: 0, tickwork: false }
                : { queue, dlqJobId, job: d.entry.jobName, reason: d.entry.failureReason, attemptsMade: d.entry.attemptsMade, lastFailedAt: d.entry.lastFailedAt, redriveCount: d.entry.redriveCount, tickwork: true },
            );
          }
        }
        ctx.out.result(rows, () =>
          rows.length === 0
            ? 'no dead letters'
            : table(
                ['QUEUE', 'DLQ ID', 'JOB', 'ATTEMPTS', 'LAST FAILED (UTC)', 'REASON'],
                rows.map((r) => [r.queue, r.dlqJobId, r.job, String(r.attemptsMade), r.lastFailedAt, r.reason.split('\n')[0]?.slice(0, 80) ?? '']),
              ),
        );
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
        const outcomes = await redriveDeadLetters({ queues: ctx.queues(), queue, selector: selector(ctx), catalog: ctx.catalog, dryRun });
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
        const purged = await purgeDeadLetters({ queues: ctx.queues(), queue, selector: selector(ctx), dryRun });
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
