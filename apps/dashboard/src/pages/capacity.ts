import { COMPONENT_HELP, estimateNote, formatAge, formatBytes, formatRatio, type CapacityReport } from '@tickwork/operations';
import { html, type SafeHtml } from '../html.js';
import { layout, time } from './layout.js';

function memoryLine(r: CapacityReport): SafeHtml {
  const m = r.memory;
  return m.maxBytes > 0
    ? html`<strong>${formatBytes(m.usedBytes)}</strong> of ${formatBytes(m.maxBytes)} maxmemory (<strong>${formatRatio(m.ratio ?? 0)}</strong>)`
    : html`<strong>${formatBytes(m.usedBytes)}</strong>, no maxmemory set`;
}

/** `/capacity`: Redis memory against maxmemory, the sampled estimate per component, queue and DLQ sizes. */
export function renderCapacity(r: CapacityReport): SafeHtml {
  const e = r.estimate;
  const share = (bytes: number) => (e.totalBytes > 0 ? formatRatio(bytes / e.totalBytes) : '-');
  const body = html`<h1>Capacity</h1>
${r.problems.map((p) => html`<div class="flash error" role="alert">${p}</div>`)}
<dl>
<dt>Used memory</dt><dd>${memoryLine(r)}</dd>
<dt>Policy</dt><dd><code>${r.memory.policy}</code></dd>
<dt>Dataset</dt><dd>${formatBytes(r.memory.datasetBytes)}</dd>
<dt>Keys</dt><dd>${e.dbKeys}</dd>
<dt>Measured at</dt><dd>${time(r.at)}</dd>
</dl>
<h2>By component</h2>
<p class="muted">Shares are ${estimateNote(e)}.</p>
<table style="width:auto">
<thead><tr><th>Component</th><th>Estimated bytes</th><th>Share</th><th>Estimated keys</th><th>What</th></tr></thead>
<tbody>
${e.components.map(
  (c) => html`<tr><td>${c.component}</td><td class="num">${formatBytes(c.bytes)}</td><td class="num">${share(c.bytes)}</td><td class="num">${c.keys}</td><td class="muted">${COMPONENT_HELP[c.component]}</td></tr>`,
)}
</tbody>
</table>
<h2>Queues</h2>
<p class="muted">Exact counts. Nothing trims a dead-letter queue: re-drive or purge its entries on <a href="/dead-letters">Dead letters</a>.</p>
<table style="width:auto">
<thead><tr><th>Queue</th><th>Waiting</th><th>Delayed</th><th>Active</th><th>Completed</th><th>Failed</th><th>DLQ entries</th><th>Oldest DLQ entry</th><th>Age</th></tr></thead>
<tbody>
${r.queues.map(
  (q) => html`<tr><td>${q.queue}</td><td class="num">${q.waiting}</td><td class="num">${q.delayed}</td><td class="num">${q.active}</td><td class="num">${q.completed}</td><td class="num">${q.failed}</td><td class="num">${q.dlq.entries}</td><td>${time(q.dlq.oldestAt)}</td><td>${q.dlq.oldestAgeSeconds === null ? '-' : formatAge(q.dlq.oldestAgeSeconds)}</td></tr>`,
)}
</tbody>
</table>`;
  return layout({ title: 'Capacity', section: 'capacity', body });
}
