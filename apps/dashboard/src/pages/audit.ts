import { AUDIT_MAX_LEN, type AuditEntry } from '../audit.js';
import { html, type SafeHtml } from '../html.js';
import { layout, time } from './layout.js';

export function renderAudit(data: { entries: AuditEntry[]; next: string | null }, q: { before?: string | undefined; limit: number }): SafeHtml {
  const body = html`<h1>Audit log</h1>
<p class="muted">Every state-changing request made on this dashboard (its buttons and Bull Board's), refused ones included, newest first. Redis keeps the last ${AUDIT_MAX_LEN} or so; the dashboard's log keeps every one.</p>
${
  data.entries.length === 0
    ? html`<p class="muted">${q.before ? 'No older actions.' : 'No actions yet.'}</p>`
    : html`<table>
<thead><tr><th>Time</th><th>User</th><th>Role</th><th>Method</th><th>Target</th><th>Status</th></tr></thead>
<tbody>${data.entries.map(
        (e) => html`<tr><td>${time(e.at)}</td><td>${e.user}</td><td>${e.role}</td><td>${e.method}</td><td class="wrap"><code>${e.target}</code></td><td class="num${e.status >= 400 ? ' err' : ''}">${e.status}</td></tr>`,
      )}</tbody>
</table>`
}
<p>${q.before !== undefined && html`<a href="/audit">Newest</a> `}${data.next !== null && html`<a rel="next" href="/audit?before=${data.next}&limit=${q.limit}">Older →</a>`}</p>`;
  return layout({ title: 'Audit log', section: 'audit', body });
}
