import { CancelInputError, requestCancel } from '@tickwork/operations';
import { describeSchedule } from '@tickwork/schedules';
import { knownQueues } from '@tickwork/core';
import { userInfo } from 'node:os';
import type { CommandContext } from '../context.js';
import type { Command } from './command.js';
import { table } from '../table.js';
import { UsageError } from '../usage-error.js';

const USAGE = ['tickwork jobs [--json]', '       tickwork jobs cancel --queue <q> --job <job id> [--reason <text>] [--json]'].join('\n');

function listCatalog(ctx: CommandContext): void {
  const rows = ctx.catalog.jobs.map((j) => ({
    name: j.name,
    queue: j.queue,
    schedule: j.schedule ? describeSchedule(j) : null,
    tz: j.schedule?.tz ?? null,
    description: j.description ?? null,
  }));
  ctx.out.result(rows, () =>
    table(['NAME', 'QUEUE', 'SCHEDULE', 'TZ'], rows.map((r) => [r.name, r.queue, r.schedule ?? '(on demand)', r.tz ?? '-'])),
  );
}

/** Who the CLI cancels as: the OS user, marked as the CLI's (`cli:<user>`), in the job's failed reason. */
function cliUser(): string {
  try {
    return `cli:${userInfo().username}`;
  } catch {
    return 'cli';
  }
}

async function cancel(ctx: CommandContext): Promise<void> {
  const { queue, job, reason } = ctx.flags;
  const queues = [...new Set([...ctx.catalog.queues, ...(await knownQueues(ctx.redis(), ctx.env.QUEUE_PREFIX))])].sort();
  if (typeof queue !== 'string' || queue === '') throw new UsageError(`--queue is required; known queues: ${queues.join(', ')}`);
  if (!queues.includes(queue)) throw new UsageError(`unknown queue "${queue}"; known queues: ${queues.join(', ')}`);
  if (typeof job !== 'string' || job.trim() === '') throw new UsageError('--job <job id> is required (Bull Board and the dashboard\'s Running page show job ids)');
  try {
    const { state, request } = await requestCancel({ queues: ctx.queues(), queue, jobId: job.trim(), by: cliUser(), reason: typeof reason === 'string' ? reason : undefined });
    await ctx.audit('jobs cancel', { queue, jobId: request.jobId, reason: request.reason ?? undefined, state });
    const what = state === 'active' ? 'its worker aborts it now' : `it is ${state}: it ends as cancelled, without running, when a worker takes it`;
    ctx.out.result({ queue, jobId: request.jobId, state, request }, () => `cancel requested for ${request.jobId} on ${queue}; ${what}`);
  } catch (err) {
    // An unknown id or a finished job (JobNotFoundError, JobNotCancellableError) is reported as is: exit 1.
    if (err instanceof CancelInputError) throw new UsageError(err.message);
    throw err;
  }
}

export const jobsCommand: Command = {
  name: 'jobs',
  usage: USAGE,
  summary: 'List the job catalog (name, queue, schedule, timezone), or cancel a job: jobs cancel.',
  valueFlags: ['queue', 'job', 'reason'],
  async run(ctx) {
    const [sub, extra] = ctx.args;
    if (sub === undefined) {
      if (ctx.flags.queue !== undefined || ctx.flags.job !== undefined || ctx.flags.reason !== undefined) throw new UsageError('--queue, --job and --reason go with `jobs cancel`');
      return listCatalog(ctx);
    }
    if (sub !== 'cancel') throw new UsageError(`unknown jobs action "${sub}"; use cancel, or no action to list the catalog`);
    if (extra !== undefined) throw new UsageError(`unexpected argument "${extra}"; name the job with --queue and --job`);
    return cancel(ctx);
  },
};
