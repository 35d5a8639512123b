import { AUDIT_RETENTION_MS, REFUSALS_KEPT, REFUSAL_COUNT_DAYS, type AuditEntry, type AuditPage, type RefusalCounts } from '@tickwork/operations';
import { html, type SafeHtml } from '../html.js';
import { layout, time } from './layout.js';

type PageQuery = { before?: string | undefined; limit: number };

const RETENTION_DAYS = AUDIT_RETENTION_MS / 86_400_000;

function who(e: AuditEntry): SafeHtml {
  return e.source === 'cli' ? html`${e.user}<span class="muted">@${e.host ?? '?'}</span>` : html`${e.user}`;
}

function via(e: AuditEntry): SafeHtml {
  return e.source === 'cli' ? html`<span class="badge neutral">CLI</span>` : html`dashboard${e.role && html` <span class="muted">(${e.role})</span>`}`;
}

function what(e: AuditEntry): SafeHtml {
  return e.method ? html`${e.method} <code>${e.target}</code>` : html`<code>${e.target}</code>`;
}

function detail(e: AuditEntry): SafeHtml {
  const pairs = Object.entries(e.detail);
  return html`${pairs.map(([k, v], i) => html`${i > 0 && html`<br>`}<span class="muted">${k}</span> ${v}`)}`;
}

function outcome(e: AuditEntry): SafeHtml {
  if (e.status === null) return html`<td>done</td>`;
  return html`<td class="num${e.status >= 400 ? ' err' : ''}">${e.status}</td>`;
}

function entriesTable(page: AuditPage, q: PageQuery, path: string, empty: string): SafeHtml {
  return html`${
    page.entries.length === 0
      ? html`<p class="muted">${q.before ? 'No older entries.' : empty}</p>`
      : html`<table>
<thead><tr><th>Time</th><th>User</th><th>Via</th><th>Action</th><th>Detail</th><th>Status</th></tr></thead>
<tbody>${page.entries.map(
          (e) => html`<tr><td>${time(e.at)}</td><td>${who(e)}</td><td>${via(e)}</td><td class="wrap">${what(e)}</td><td class="wrap">${detail(e)}</td>${outcome(e)}</tr>`,
        )}</tbody>
</table>`
  }
<p>${q.before !== undefined && html`<a href="${path}">Newest</a> `}${page.next !== null && html`<a rel="next" href="${path}?before=${page.next}&limit=${q.limit}">Older →</a>`}</p>`;
}

/** `/audit`: the actions, newest first, with the number of refused requests of the last 24 hours. */
export function renderAudit(page: AuditPage, q: PageQuery, refusedLast24h: number): SafeHtml {
  const body = html`<h1>Audit log</h1>
<p class="muted">Every action taken on this dashboard (its buttons and Bull Board's) and with the <code>tickwork</code> CLI, newest first, kept ${RETENTION_DAYS} days. A CLI action names the OS user and machine that ran it.</p>
<p id="refused-summary">Refused requests (a viewer's change, a request another site sent) are counted apart: <a href="/audit/refused">${refusedLast24h} in the last 24 hours</a>.</p>
${entriesTable(page, q, '/audit', 'No actions yet.')}`;
  return layout({ title: 'Audit log', section: 'audit', body });
}

/** `/audit/refused`: refusals per minute (last 24 hours) and the latest ones one by one. */
export function renderRefusals(page: AuditPage, counts: RefusalCounts, q: PageQuery): SafeHtml {
  const body = html`<p><a href="/audit">← Audit log</a></p>
<h1>Refused requests</h1>
<p class="muted">State-changing requests the dashboard refused: a viewer's (403), one without this dashboard's origin or form token (403), a body over its limit (413). The latest ${REFUSALS_KEPT} or so are kept one by one, the count per minute for ${REFUSAL_COUNT_DAYS} days; neither ever shortens the audit log.</p>
<h2>Last 24 hours: <span id="refused-total">${counts.total}</span></h2>
${
  counts.minutes.length === 0
    ? html`<p class="muted">None.</p>`
    : html`<div class="scroll" style="max-height:320px"><table style="width:auto">
<thead><tr><th>Minute</th><th>Refused</th></tr></thead>
<tbody>${counts.minutes.map((m) => html`<tr><td>${time(m.at)}</td><td class="num">${m.count}</td></tr>`)}</tbody>
</table></div>`
}
<h2>Latest</h2>
${entriesTable(page, q, '/audit/refused', 'No refused requests kept.')}`;
  return layout({ title: 'Refused requests', section: 'audit', body });
}
