import { enqueueByName } from '@tickwork/core';
import type { Command } from './command.js';
import { integerFlag } from '../flags.js';
import { readPayloadSource } from '../payload-source.js';
import { UsageError } from '../usage-error.js';

export const enqueueCommand: Command = {
  name: 'enqueue',
  usage:
    "tickwork enqueue <job> ['<json payload>' | @<file> | -] [--data '<json>' | @<file> | -] [--id <job id>] [--delay-ms <ms>] [--json]",
  summary: 'Validate a payload and enqueue a job.',
  valueFlags: ['id', 'delay-ms', 'data'],
  async run(ctx) {
    const [name, positional, extra] = ctx.args;
    if (!name) throw new UsageError('missing <job>; run `tickwork jobs` to list job names');
    const dataFlag = ctx.flags.data;
    if (extra !== undefined || (positional !== undefined && dataFlag !== undefined)) {
      throw new UsageError('give the payload once: as one argument or with --data');
    }
    const delayMs = integerFlag(ctx.flags, 'delay-ms', { min: 0, unit: 'milliseconds' });
    const source = typeof dataFlag === 'string' ? dataFlag : (positional ?? '{}');
    const raw = await readPayloadSource(source);
    let data: unknown;
    try {
      data = JSON.parse(raw);
    } catch (err) {
      throw new UsageError(`payload is not valid JSON (${(err as Error).message}); quote it, e.g. '{"to":"a@b.c"}'`);
    }
    const id = ctx.flags.id;
    const { id: jobId } = await enqueueByName(ctx.catalog, ctx.enqueue(), name, data, {
      ...(typeof id === 'string' && { jobId: id }),
      ...(delayMs !== undefined && { delayMs }),
    });
    const job = ctx.catalog.require(name);
    // The job and its id, never its payload (it may carry personal data).
    await ctx.audit('enqueue', { job: name, queue: job.queue, jobId, delayMs });
    ctx.out.result({ id: jobId, job: name, queue: job.queue }, () => `enqueued ${name} as ${jobId} on queue ${job.queue}`);
  },
};
