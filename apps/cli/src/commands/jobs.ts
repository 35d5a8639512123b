import { describeSchedule } from '@tickwork/runtime';
import type { Command } from './command.js';
import { table } from '../table.js';

export const jobsCommand: Command = {
  name: 'jobs',
  usage: 'tickwork jobs [--json]',
  summary: 'List the job catalog: name, queue, schedule, timezone.',
  async run(ctx) {
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
  },
};
