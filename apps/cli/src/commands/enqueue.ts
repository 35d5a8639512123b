import { enqueueByName } from '@tickwork/runtime';
import type { Command } from './command.js';
import { UsageError } from '../usage-error.js';

export const enqueueCommand: Command = {
  name: 'enqueue',
  usage: "tickwork enqueue <job> '<json payload>' [--id <job id>] [--delay-ms <ms>] [--json]",
  summary: 'Validate a payload and enqueue a job.',
  valueFlags: ['id', 'delay-ms'],
  async run(ctx) {
    const [name, raw = '{}'] = ctx.args;
    if (!name) throw new UsageError('missing <job>; run `tickwork jobs` to list job names');
    let data: unknown;
    try {
      data = JSON.parse(raw);
    } catch (err) {
      throw new UsageError(`payload is not valid JSON (${(err as Error).message}); quote it, e.g. '{"to":"a@b.c"}'`);
    }
    const delay = ctx.flags['delay-ms'];
    const delayMs = typeof delay === 'string' ? Number(delay) : undefined;
    if (delayMs !== undefined && !(Number.isInteger(delayMs) && delayMs >= 0)) {
      throw new UsageError('--delay-ms must be a whole number of milliseconds');
    }
    const id = ctx.flags.id;
    const { id: jobId } = await enqueueByName(ctx.catalog, ctx.enqueue(), name, data, {
      ...(typeof id === 'string' && { jobId: id }),
      ...(delayMs !== undefined && { delayMs }),
    });
    const job = ctx.catalog.require(name);
    ctx.out.result({ id: jobId, job: name, queue: job.queue }, () => `enqueued ${name} as ${jobId} on queue ${job.queue}`);
  },
};
