import { slowAfterMsOf, type OccurrenceRecord, type RemovedScheduleView, type ScheduleView } from '@tickwork/schedules';
import { DEFAULT_PAGE, type RuntimePage, type RuntimeQuery } from '../data/runtime-schedules.js';
import { html, type SafeHtml } from '../html.js';
import { duration, layout, offsetLabel, time, type Flash } from './layout.js';
import { pausedState, scheduleActions, schedulePath } from './schedule-actions.js';
import { historySection, policies } from './schedules.js';

function rule(v: ScheduleView): SafeHtml {
  const r = v.pattern !== undefined ? html`cron <code>${v.pattern}</code>` : html`every ${duration(v.everyMs ?? 0)}`;
  return html`<span class="nowrap">${r}</span><br><span class="muted">tz</span> ${v.tz}`;
}

/**
 * A time in the schedule's timezone (with its UTC offset) and in UTC. Intl does the zone arithmetic, so
 * the dashboard needs no date library for it.
 */
export function zoned(iso: string | null, tz: string): SafeHtml {
  if (iso === null) return html`<span class="muted">none: the pattern has no further occurrence</span>`;
  const parts = Object.fromEntries(
    new Intl.DateTimeFormat('en-CA', { timeZone: tz, year: 'numeric', month: '2-digit', day: '2-digit', hour: '2-digit', minute: '2-digit', second: '2-digit', hourCycle: 'h23', timeZoneName: 'longOffset' })
      .formatToParts(new Date(iso))
      .map((p) => [p.type, p.value]),
  );
  const local = `${parts.year}-${parts.month}-${parts.day} ${parts.hour}:${parts.minute}:${parts.second}`;
  // Intl names the offset `GMT-08:00` (and plain `GMT` for zero): written as every other time is.
  const offset = String(parts.timeZoneName ?? '').replace(/^GMT/, '');
  return html`<span class="nowrap">${local} <span class="muted">${offsetLabel(offset === '' ? 'Z' : offset)}</span></span> <span class="muted">=</span> ${time(iso)}`;
}

/** The listing's parameters as a query string, so the page's links keep the filter; no cursor: the first page. */
function listingHref(q: RuntimeQuery, cursor?: string): string {
  const params = new URLSearchParams();
  if (q.prefix !== undefined) params.set('prefix', q.prefix);
  if (q.job !== undefined) params.set('job', q.job);
  if (q.limit !== DEFAULT_PAGE) params.set('limit', String(q.limit));
  if (cursor !== undefined) params.set('cursor', cursor);
  const search = params.toString();
  return `/schedules${search ? `?${search}` : ''}#runtime`;
}

/** A GET form: the filter travels in the URL, so a filtered page can be bookmarked. */
function filterForm(q: RuntimeQuery, jobs: readonly string[]): SafeHtml {
  return html`<form method="get" action="/schedules#runtime" class="filter">
<label>Id starts with <input name="prefix" value="${q.prefix ?? ''}" placeholder="the start of an id"></label>
<label>Job <select name="job"><option value="">all</option>${jobs.map((j) => html`<option${j === q.job ? html` selected` : ''}>${j}</option>`)}</select></label>
<label>Per page <input name="limit" value="${String(q.limit)}" size="4"></label>
<button type="submit">Search</button> <a href="/schedules#runtime">clear</a>
</form>`;
}

function row(v: ScheduleView): SafeHtml {
  return html`<tr>
<td class="wrap"><a href="${schedulePath(v.id)}">${v.id}</a></td>
<td>${v.job}<br><span class="muted">queue</span> ${v.queue}</td>
<td>${rule(v)}</td>
<td>${zoned(v.next, v.tz)}</td>
<td class="wrap">${pausedState(v)}</td>
</tr>`;
}

export interface RuntimeSectionInput {
  page: RuntimePage;
  query: RuntimeQuery;
  /** Job names for the filter's choices (the catalog's). */
  jobs: readonly string[];
}

/** One page of runtime schedules, searchable by id prefix and job, with the count Redis keeps. */
export function renderRuntimeSection({ page, query, jobs }: RuntimeSectionInput): SafeHtml {
  const filtered = query.prefix !== undefined || query.job !== undefined;
  return html`<h2 id="runtime">Runtime schedules</h2>
<p class="muted" id="runtime-count">${page.count} runtime ${page.count === 1 ? 'schedule' : 'schedules'}${query.job !== undefined && ` of job ${query.job}`}${
    query.prefix !== undefined && ` (the count ignores the id prefix)`
  }. Created by the application through the schedule API or <code>tickwork schedules add</code>; ordered by id, ${query.limit} per page.</p>
${filterForm(query, jobs)}
${
  page.items.length === 0
    ? html`<p class="muted">${filtered || query.cursor ? 'No matching runtime schedules on this page.' : 'No runtime schedules.'}</p>`
    : html`<div class="scroll"><table>
<thead><tr><th>Id</th><th>Job / queue</th><th>When</th><th>Next occurrence</th><th>State</th></tr></thead>
<tbody>
${page.items.map(row)}
</tbody>
</table></div>`
}
<p>${query.cursor !== undefined && html`<a href="${listingHref(query)}">First page</a> `}${
    page.cursor !== null && html`<a rel="next" href="${listingHref(query, page.cursor)}">Next page →</a>`
  }</p>`;
}

/** A runtime schedule's page: definition, state, next occurrence, its buttons and its history. */
export function renderRuntimeDetail(v: ScheduleView, history: OccurrenceRecord[], now: Date, token: string | undefined, flash: Flash | undefined): SafeHtml {
  const body = html`<p><a href="/schedules#runtime">← Schedules</a></p>
<h1>${v.id}${v.paused && html` <span class="badge stale">paused</span>`}</h1>
${scheduleActions(v, token)}
<dl>
<dt>Source</dt><dd>${v.source}</dd>
<dt>Job / queue</dt><dd>${v.job} <span class="muted">on</span> ${v.queue}</dd>
<dt>When</dt><dd>${rule(v)}</dd>
<dt>Policies</dt><dd>${policies(v)}</dd>
<dt>State</dt><dd>${pausedState(v)}</dd>
<dt>Next occurrence</dt><dd>${zoned(v.next, v.tz)}</dd>
<dt>Watchdog</dt><dd>${v.watch ? 'on: stale and slow-run alerts' : 'off'}</dd>
<dt>History kept</dt><dd>${v.historyCap} occurrences</dd>
<dt>Version</dt><dd>${v.version} <span class="muted">(created ${time(v.createdAt)}, changed ${time(v.updatedAt)})</span></dd>
</dl>
<h2>Data</h2>
<pre>${JSON.stringify(v.data, null, 2) ?? 'undefined'}</pre>
${historySection(history, now, slowAfterMsOf(v.policies, v.everyMs ?? null), v.historyCap, v.queue)}`;
  return layout({ title: v.id, section: 'schedules', flash, body });
}

/**
 * A removed schedule's page: what it was (when the store recorded it) and its history, readable until it
 * expires; no buttons (there is nothing left to pause or run).
 */
export function renderRemovedDetail(r: RemovedScheduleView, history: OccurrenceRecord[], now: Date): SafeHtml {
  const v = r.definition;
  const body = html`<p><a href="/schedules#runtime">← Schedules</a></p>
<h1>${r.id} <span class="badge stale" id="removed">removed</span></h1>
<p class="muted">This schedule was removed${r.removedAt !== null && html` at ${time(r.removedAt)}`}: it no longer fires. Its history stays readable${
    r.expiresAt !== null && html` until ${time(r.expiresAt)}`
  }, then Redis drops it.</p>
${
  v
    ? html`<dl>
<dt>Source</dt><dd>${v.source}</dd>
<dt>Job / queue</dt><dd>${v.job} <span class="muted">on</span> ${v.queue}</dd>
<dt>When</dt><dd>${rule(v)}</dd>
<dt>Policies</dt><dd>${policies(v)}</dd>
<dt>History kept</dt><dd>${v.historyCap} occurrences</dd>
<dt>Version</dt><dd>${v.version} <span class="muted">(created ${time(v.createdAt)}, changed ${time(v.updatedAt)})</span></dd>
</dl>
<h2>Data</h2>
<pre>${JSON.stringify(v.data, null, 2) ?? 'undefined'}</pre>`
    : html`<p class="muted">Its definition was not recorded at removal; only its history is left.</p>`
}
${historySection(history, now, v ? slowAfterMsOf(v.policies, v.everyMs ?? null) : Number.POSITIVE_INFINITY, v?.historyCap ?? null, v?.queue)}`;
  return layout({ title: `${r.id} (removed)`, section: 'schedules', body });
}
