import { DLQ_BATCH_SIZE, redrivenJobId, type DlqItem, type DlqListing, type DlqListQuery, type DlqSummary, type ForeignDlqJob } from '@tickwork/operations';
import { html, type SafeHtml } from '../html.js';
import { CSRF_FIELD } from '../csrf.js';
import { action } from './forms.js';
import { layout, time, type Flash } from './layout.js';
import { boardJobPath, jobPath, occurrencePath } from './links.js';

export function deadLetterPath(queue: string, dlqJobId: string): string {
  return `/dead-letters/${encodeURIComponent(queue)}/${encodeURIComponent(dlqJobId)}`;
}

/** A selected entry as a checkbox sends it to `POST /dead-letters/selected`: `<queue>/<dlq job id>`, each URI-encoded. */
export function selectedValue(queue: string, dlqJobId: string): string {
  return `${encodeURIComponent(queue)}/${encodeURIComponent(dlqJobId)}`;
}

/** Pages get no token for a viewer (read-only role), and then render no buttons at all. */
type Token = string | undefined;

function redriveOne(queue: string, id: string, token: Token): SafeHtml {
  return action(`${deadLetterPath(queue, id)}/redrive`, 'Re-drive', token);
}

/** Purging loses the entry for good, so the button is one click further away (no script needed). */
function purgeOne(queue: string, id: string, token: Token): SafeHtml {
  if (token === undefined) return html``;
  return html`<details class="inline"><summary>Purge…</summary>${action(`${deadLetterPath(queue, id)}/purge`, 'Purge for good', token, true)}</details>`;
}

/** Marks a job that something other than tickwork put in the DLQ. */
const FOREIGN = html`<span class="badge stale" title="something other than tickwork added this job to the dead-letter queue: it can be purged, not re-driven">not a tickwork entry</span>`;

function entryRow(e: DlqSummary, token: Token): SafeHtml {
  return html`<tr>
${token !== undefined && html`<td><input type="checkbox" name="ids" value="${selectedValue(e.queue, e.dlqJobId)}" form="bulk" aria-label="select ${e.dlqJobId}"></td>`}
<td>${e.queue}</td>
<td><a href="${deadLetterPath(e.queue, e.dlqJobId)}">${e.job || '(no name)'}</a>${!e.tickwork && html` ${FOREIGN}`}<br><code class="muted">${e.dlqJobId}</code></td>
<td><a href="${jobPath(e.queue, e.originalJobId)}"><code>${e.originalJobId}</code></a></td>
<td class="err wrap">${e.reason}</td>
<td class="num">${e.attempts}</td>
<td>${time(e.lastFailedAt)}</td>
<td>${time(e.nominalTime)}</td>
<td>${e.tickwork && redriveOne(e.queue, e.dlqJobId, token)} ${purgeOne(e.queue, e.dlqJobId, token)}</td>
</tr>`;
}

/** The listing's first page with its filter: where a bulk action on it comes back to. */
function listingPath(q: DlqListQuery): string {
  const href = listingHref(q, '');
  return href.replace(/[?&]cursor=$/, '');
}

/**
 * Bulk actions for admins: the ticked entries (checkboxes in the rows belong to the `bulk` form), or every
 * entry shown (the filtered set, a page at a time: done entries leave the DLQ, so pressing again on the
 * page it comes back to continues with the next matches).
 */
function bulkActions(entries: DlqSummary[], query: DlqListQuery, token: Token): SafeHtml {
  if (token === undefined || entries.length === 0) return html``;
  const back = listingPath(query);
  const common = html`<input type="hidden" name="${CSRF_FIELD}" value="${token}"><input type="hidden" name="back" value="${back}">`;
  const redrivable = entries.filter((e) => e.tickwork);
  const ids = (list: DlqSummary[]) => list.map((e) => html`<input type="hidden" name="ids" value="${selectedValue(e.queue, e.dlqJobId)}">`);
  return html`<div class="bulk">
<form id="bulk" class="inline" method="post" action="/dead-letters/selected">${common}<button type="submit" name="action" value="redrive">Re-drive selected</button> <details class="inline"><summary>Purge selected…</summary><button type="submit" name="action" value="purge" class="danger">Purge selected for good</button></details></form>
${redrivable.length > 0 && html`<form class="inline" method="post" action="/dead-letters/selected">${common}${ids(redrivable)}<button type="submit" name="action" value="redrive">Re-drive the ${redrivable.length} shown</button></form>`}
<details class="inline"><summary>Purge the ${entries.length} shown…</summary><form class="inline" method="post" action="/dead-letters/selected">${common}${ids(entries)}<button type="submit" name="action" value="purge" class="danger">Purge the ${entries.length} shown for good</button></form></details>
</div>`;
}

/** The listing's parameters as a query string (the page's own links keep the filter). */
function listingHref(q: DlqListQuery, cursor: string): string {
  const f = q.filter;
  const params = new URLSearchParams();
  const set = (k: string, v: string | undefined) => v !== undefined && params.set(k, v);
  set('queue', q.queue);
  set('name', f.name);
  set('reason', f.reason);
  set('since', f.since?.toISOString());
  set('until', f.until?.toISOString());
  set('limit', String(q.limit));
  params.set('cursor', cursor);
  return `/dead-letters?${params.toString()}`;
}

/** A GET form: the filter travels in the URL, so a filtered page can be bookmarked and shared. */
function filterForm(q: DlqListQuery, queues: string[]): SafeHtml {
  const f = q.filter;
  return html`<form method="get" action="/dead-letters" class="filter">
<label>Queue <select name="queue"><option value="">all</option>${queues.map((name) => html`<option${name === q.queue ? html` selected` : ''}>${name}</option>`)}</select></label>
<label>Job <input name="name" value="${f.name ?? ''}" placeholder="exact name"></label>
<label>Reason contains <input name="reason" value="${f.reason ?? ''}"></label>
<label>Since <input name="since" value="${f.since?.toISOString() ?? ''}" placeholder="2024-05-01T00:00Z"></label>
<label>Until <input name="until" value="${f.until?.toISOString() ?? ''}"></label>
<label>Per page <input name="limit" value="${String(q.limit)}" size="4"></label>
<button type="submit">Filter</button> <a href="/dead-letters">clear</a>
</form>`;
}

function queueActions(queue: string, count: number, token: Token): SafeHtml {
  if (token === undefined) return html``;
  const q = encodeURIComponent(queue);
  const batch = Math.min(count, DLQ_BATCH_SIZE);
  return html`${action(`/dead-letters/${q}/redrive-all`, count > batch ? `Re-drive the next ${batch} of ${count}` : `Re-drive all ${count}`, token)}
<details class="inline"><summary>Purge…</summary>${action(`/dead-letters/${q}/purge-all`, count > batch ? `Purge the next ${batch} of ${count} for good` : `Purge all ${count} for good`, token, true)}</details>`;
}

export function renderDeadLetters(data: DlqListing, query: DlqListQuery, token: Token, flash: Flash | undefined): SafeHtml {
  const filtered = Object.values(query.filter).some((v) => v !== undefined);
  const shown = data.entries.length;
  const body = html`<h1>Dead letters</h1>
<p class="muted">Jobs that failed for the last time. Fix the cause, then re-drive them: a re-driven job gets fresh attempts and keeps its idempotency key and nominal time. "All" actions work oldest first, ${DLQ_BATCH_SIZE} entries per press.</p>
<h2>Per queue</h2>
<table style="width:auto">
<thead><tr><th>Queue</th><th>Dead-letter queue</th><th>Entries</th><th></th></tr></thead>
<tbody>
${data.counts.map(
  (c) => html`<tr><td>${c.queue}</td><td><code>${c.queue}.dlq</code></td><td class="num">${c.count}</td><td>${c.count > 0 && queueActions(c.queue, c.count, token)}</td></tr>`,
)}
</tbody>
</table>
<h2>Entries</h2>
${filterForm(query, data.counts.map((c) => c.queue))}
<p class="muted" id="page-info">${shown} shown${
    filtered ? `, ${data.scanned} examined: a filter examines at most ${data.scanWindow} entries per page` : ''
  }${data.windowFull ? '; more matches may follow on the next page' : ''}. Oldest first, queue by queue.</p>
${
  shown === 0
    ? html`<p class="muted">${filtered || query.cursor ? 'No matching entries on this page.' : 'No dead letters.'}</p>`
    : html`${bulkActions(data.entries, query, token)}<table>
<thead><tr>${token !== undefined && html`<th>Select</th>`}<th>Queue</th><th>Job</th><th>Original id</th><th>Reason</th><th>Attempts</th><th>Last failure</th><th>Nominal time</th><th>Actions</th></tr></thead>
<tbody>
${data.entries.map((e) => entryRow(e, token))}
</tbody>
</table>`
}
<p>${query.cursor !== undefined && html`<a href="/dead-letters">First page</a> `}${data.next !== null && html`<a rel="next" href="${listingHref(query, data.next)}">Next page →</a>`}</p>`;
  return layout({ title: 'Dead letters', section: 'dead-letters', flash, body });
}

/** The job a re-drive made, linked to its page. */
function redrivenLink(queue: string, rootDlqJobId: string, redriveCount: number): SafeHtml {
  const id = redrivenJobId(rootDlqJobId, redriveCount);
  return html`<a href="${jobPath(queue, id)}"><code>${id}</code></a>`;
}

function json(value: unknown): string {
  return JSON.stringify(value, null, 2) ?? 'undefined';
}

/** The entry as JSON (`GET /api/dead-letters/<queue>/<id>`), to keep or to hand on before purging it. */
function exportLink(queue: string, id: string): SafeHtml {
  return html`<p><a href="/api${deadLetterPath(queue, id)}" download="${`${queue}.dlq-${id}.json`}">Export as JSON</a></p>`;
}

function renderForeignDetail(queue: string, d: ForeignDlqJob, token: Token): SafeHtml {
  const f = d.foreign;
  const body = html`<p><a href="/dead-letters">← Dead letters</a></p>
<h1>${f.name || '(no name)'} <span class="muted">in</span> <code>${d.dlqQueue}</code> ${FOREIGN}</h1>
<p>${purgeOne(queue, d.dlqJobId, token)}</p>
<dl>
<dt>DLQ id</dt><dd><code>${d.dlqJobId}</code></dd>
<dt>Added</dt><dd>${time(f.addedAt)}</dd>
<dt>Why it is not a tickwork entry</dt><dd class="err">${f.problem}</dd>
</dl>
${
  f.raw === null
    ? html`<h2>Data</h2>
<pre>${json(f.data)}</pre>`
    : html`<h2>Data <span class="muted">(as stored: not JSON)</span></h2>
<pre id="raw-data">${f.raw}</pre>`
}
${exportLink(queue, d.dlqJobId)}`;
  return layout({ title: 'Not a tickwork dead letter', section: 'dead-letters', body });
}

export function renderDeadLetterDetail(queue: string, d: DlqItem, token: Token): SafeHtml {
  if (d.entry === null) return renderForeignDetail(queue, d, token);
  const e = d.entry;
  const body = html`<p><a href="/dead-letters">← Dead letters</a></p>
<h1>${e.jobName} <span class="muted">in</span> <code>${d.dlqQueue}</code></h1>
<p>${redriveOne(queue, d.dlqJobId, token)} ${purgeOne(queue, d.dlqJobId, token)}</p>
<p><a href="${boardJobPath(d.dlqQueue, d.dlqJobId)}">On Bull Board</a></p>
<dl>
<dt>DLQ id</dt><dd><code>${d.dlqJobId}</code></dd>
<dt>Origin queue</dt><dd>${e.originQueue}</dd>
<dt>Original job id</dt><dd><a href="${jobPath(e.originQueue, e.originalJobId)}"><code>${e.originalJobId}</code></a></dd>
<dt>Idempotency key</dt><dd><code>${e.idempotencyKey}</code></dd>
<dt>Reason</dt><dd class="err">${e.failureReason}</dd>
<dt>Attempts made</dt><dd>${e.attemptsMade}</dd>
<dt>First failure</dt><dd>${time(e.firstFailedAt)}</dd>
<dt>Last failure</dt><dd>${time(e.lastFailedAt)}</dd>
<dt>Dead-lettered</dt><dd>${time(e.deadLetteredAt)}</dd>
<dt>Nominal time</dt><dd>${time(e.nominalTime)}</dd>
<dt>Schedule</dt><dd>${e.scheduleId === null ? html`<span class="muted">-</span>` : html`<a href="${occurrencePath(e.scheduleId, e.idempotencyKey)}">${e.idempotencyKey}</a>`}</dd>
<dt>Re-driven before</dt><dd>${e.redriveCount} time(s)</dd>
</dl>
<h2>Payload</h2>
<pre>${json(e.payload)}</pre>
<h2>Stack of the last attempt</h2>
${e.stack ? html`<pre>${e.stack}</pre>` : html`<p class="muted">No stack (the thrown value was not an Error).</p>`}
<h2>Original job options</h2>
<pre>${json(e.originalOptions)}</pre>
${exportLink(queue, d.dlqJobId)}
<h2>Earlier trips through the DLQ</h2>
${
  e.history.length === 0
    ? html`<p class="muted">None: this is its first dead-lettering.</p>`
    : html`<table>
<thead><tr><th>Job id</th><th>Reason</th><th>Attempts</th><th>First failure</th><th>Last failure</th><th>Dead-lettered</th><th>Re-driven</th><th>As job</th></tr></thead>
<tbody>
${e.history.map(
  // Re-drive i+1 of the entry's root: the job each trip was re-driven as (admin.ts redrivenJobId).
  (h, i) => html`<tr><td><a href="${jobPath(e.originQueue, h.jobId)}"><code>${h.jobId}</code></a></td><td class="err">${h.failureReason}</td><td class="num">${h.attemptsMade}</td><td>${time(h.firstFailedAt)}</td><td>${time(h.lastFailedAt)}</td><td>${time(h.deadLetteredAt)}</td><td>${time(h.redrivenAt)}</td><td>${redrivenLink(e.originQueue, e.rootDlqJobId, i + 1)}</td></tr>`,
)}
</tbody>
</table>`
}`;
  return layout({ title: `${e.jobName} dead letter`, section: 'dead-letters', body });
}
