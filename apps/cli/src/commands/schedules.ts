import type { Command } from './command.js';
import { table } from '../table.js';

export const schedulesCommand: Command = {
  name: 'schedules',
  usage: 'tickwork schedules [--json]',
  summary: 'List the schedulers registered in Redis with their next run.',
  async run(ctx) {
    const rows: { id: string; queue: string; pattern: string | null; every: number | null; tz: string | null; next: string | null }[] = [];
    for (const queueName of ctx.catalog.queues) {
      for (const s of await ctx.queues().get(queueName).getJobSchedulers(0, -1)) {
        rows.push({
          id: s.id ?? s.key,
          queue: queueName,
          pattern: s.pattern ?? null,
          every: s.every ?? null,
          tz: s.tz ?? null,
          next: s.next ? new Date(s.next).toISOString() : null,
        });
      }
    }
    ctx.out.result(rows, () =>
      rows.length === 0
        ? 'no schedules registered; start the scheduler (pnpm start or docker compose up)'
        : table(
            ['ID', 'QUEUE', 'PATTERN', 'TZ', 'NEXT (UTC)'],
            rows.map((r) => [r.id, r.queue, r.pattern ?? `every ${(r.every ?? 0) / 1000}s`, r.tz ?? '-', r.next ?? '-']),
          ),
    );
  },
};
