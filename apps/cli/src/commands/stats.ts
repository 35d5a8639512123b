import { capacityReport, COMPONENT_HELP, DEFAULT_CAPACITY_SAMPLES, estimateNote, formatAge, formatBytes, formatRatio, type CapacityReport } from '@tickwork/operations';
import type { Command } from './command.js';
import { table } from '../table.js';
import { UsageError } from '../usage-error.js';

/** Enough for a sharper estimate on a large Redis, few enough that one call stays in the milliseconds. */
const MAX_SAMPLES = 50_000;

export const statsCommand: Command = {
  name: 'stats',
  usage: `tickwork stats [--samples N] [--json]    (N: random keys to sample, 1 to ${MAX_SAMPLES}, default ${DEFAULT_CAPACITY_SAMPLES}; with at most N keys, each is measured)`,
  summary: "Redis memory against maxmemory, tickwork's share by component (sampled), queue and DLQ sizes.",
  valueFlags: ['samples'],
  async run(ctx) {
    const raw = ctx.flags.samples;
    const samples = raw === undefined ? DEFAULT_CAPACITY_SAMPLES : Number(raw);
    if (!Number.isInteger(samples) || samples < 1 || samples > MAX_SAMPLES) {
      throw new UsageError(`--samples must be an integer from 1 to ${MAX_SAMPLES}, got ${JSON.stringify(raw)}`);
    }
    const report = await capacityReport({ redis: ctx.redis(), prefix: ctx.env.QUEUE_PREFIX, catalog: ctx.catalog }, { samples });
    ctx.out.result(report, () => render(report));
  },
};

function render(r: CapacityReport): string {
  const m = r.memory;
  const e = r.estimate;
  const limit = m.maxBytes > 0 ? `of ${formatBytes(m.maxBytes)} maxmemory (${formatRatio(m.ratio ?? 0)})` : 'with no maxmemory set';
  const share = (bytes: number) => (e.totalBytes > 0 ? formatRatio(bytes / e.totalBytes) : '-');
  return [
    `Redis memory  ${formatBytes(m.usedBytes)} used ${limit}, policy ${m.policy}; dataset ${formatBytes(m.datasetBytes)}`,
    `Keys          ${e.dbKeys}`,
    ...r.problems.map((p) => `WARNING       ${p}`),
    '',
    `By component (${estimateNote(e)}):`,
    table(
      ['COMPONENT', 'BYTES', 'SHARE', 'KEYS', 'WHAT'],
      e.components.map((c) => [c.component, formatBytes(c.bytes), share(c.bytes), String(c.keys), COMPONENT_HELP[c.component]]),
    ),
    '',
    'Queues (exact counts):',
    table(
      ['QUEUE', 'WAITING', 'DELAYED', 'ACTIVE', 'COMPLETED', 'FAILED', 'DLQ', 'DLQ OLDEST (UTC)', 'DLQ AGE'],
      r.queues.map((q) => [
        q.queue,
        String(q.waiting),
        String(q.delayed),
        String(q.active),
        String(q.completed),
        String(q.failed),
        String(q.dlq.entries),
        q.dlq.oldestAt ?? '-',
        q.dlq.oldestAgeSeconds === null ? '-' : formatAge(q.dlq.oldestAgeSeconds),
      ]),
    ),
  ].join('\n');
}
