import { formatAge, PROCESS_INFO_EVERY_MS, PROCESS_MEMORY_MS, type ProcessListing, type ProcessRow } from '@tickwork/operations';
import { html, type SafeHtml } from '../html.js';
import { layout, time } from './layout.js';

const STATUS_BADGE: Record<ProcessRow['status'], string> = { alive: 'ok', gone: 'failing', stopped: 'neutral' };

function silence(p: ProcessRow): SafeHtml {
  if (p.silentMs === null) return html`<span class="muted">-</span>`;
  return html`${time(p.lastSeen)}<br><span class="muted">${formatAge(Math.round(p.silentMs / 1000))} ago</span>`;
}

function row(p: ProcessRow): SafeHtml {
  const slots = p.concurrency === null ? null : p.concurrency * p.queues.length;
  return html`<tr id="process-${p.role}-${p.tag}">
<td>${p.role}<br><code class="muted">${p.tag}</code></td>
<td><span class="badge ${STATUS_BADGE[p.status]}">${p.status}</span></td>
<td>${p.host ?? '-'}</td>
<td class="num">${p.pid ?? '-'}</td>
<td>${p.version ?? '-'}</td>
<td class="wrap">${p.queues.join(', ')}</td>
<td class="num">${p.concurrency ?? '-'}</td>
<td class="num">${p.busy === null ? '-' : slots === null ? p.busy : `${p.busy} of ${slots}`}</td>
<td>${time(p.started)}</td>
<td>${silence(p)}</td>
</tr>`;
}

/** `/processes`: every worker and scheduler seen lately, alive, gone or stopped. */
export function renderProcesses(l: ProcessListing): SafeHtml {
  const alive = l.processes.filter((p) => p.status === 'alive');
  const body = html`<h1>Processes</h1>
<p class="muted" id="process-count">${alive.filter((p) => p.role === 'worker').length} workers and ${alive.filter((p) => p.role === 'scheduler').length} schedulers alive at ${time(l.at)}. A process that stops beating shows as <em>gone</em>, one that stopped cleanly as <em>stopped</em>; either stays listed ${formatAge(PROCESS_MEMORY_MS / 1000)} after its last write. Busy slots are as of its last write (every ${formatAge(PROCESS_INFO_EVERY_MS / 1000)}).</p>
${
  l.processes.length === 0
    ? html`<p class="muted">No worker or scheduler has written a record in the last ${formatAge(PROCESS_MEMORY_MS / 1000)}.</p>`
    : html`<div class="scroll"><table>
<thead><tr><th>Process</th><th>Status</th><th>Host</th><th>Pid</th><th>Version</th><th>Queues</th><th>Concurrency</th><th>Busy slots</th><th>Started</th><th>Last heartbeat</th></tr></thead>
<tbody>${l.processes.map(row)}</tbody>
</table></div>`
}`;
  return layout({ title: 'Processes', section: 'processes', body });
}
