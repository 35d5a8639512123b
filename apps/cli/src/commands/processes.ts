import { formatAge, listProcesses, PROCESS_MEMORY_MS, type ProcessListing } from '@tickwork/operations';
import type { Command } from './command.js';
import { table } from '../table.js';

export const processesCommand: Command = {
  name: 'processes',
  usage: 'tickwork processes [--json]',
  summary: `Worker and scheduler processes seen in the last ${formatAge(PROCESS_MEMORY_MS / 1000)}: host, pid, version, queues, busy slots, last heartbeat.`,
  async run(ctx) {
    const listing = await listProcesses(ctx.redis(), ctx.env.QUEUE_PREFIX);
    ctx.out.result(listing, () => render(listing));
  },
};

function render(l: ProcessListing): string {
  if (l.processes.length === 0) return `No worker or scheduler has written a record in the last ${formatAge(PROCESS_MEMORY_MS / 1000)}.`;
  return table(
    ['ROLE', 'TAG', 'STATUS', 'HOST', 'PID', 'VERSION', 'QUEUES', 'CONCURRENCY', 'BUSY', 'STARTED (UTC)', 'LAST SEEN'],
    l.processes.map((p) => [
      p.role,
      p.tag,
      p.status,
      p.host ?? '-',
      p.pid === null ? '-' : String(p.pid),
      p.version ?? '-',
      p.queues.join(','),
      p.concurrency === null ? '-' : String(p.concurrency),
      p.busy === null ? '-' : String(p.busy),
      p.started ?? '-',
      p.silentMs === null ? '-' : `${formatAge(Math.round(p.silentMs / 1000))} ago`,
    ]),
  );
}
