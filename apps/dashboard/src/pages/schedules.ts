import type { OccurrenceRecord, PreviewOccurrence } from '@tickwork/runtime';
import { HISTORY_ROWS, type ScheduleRow } from '../data/schedules.js';
import { html, type SafeHtml } from '../html.js';
import { duration, layout, time } from './layout.js';

export function schedulePath(name: string): string {
  return `/schedules/${encodeURIComponent(name)}`;
}

function when(r: ScheduleRow): SafeHtml {
  return html`<code>${r.spec}</code><br><span class="muted">tz</span> ${r.tz}${
    r.speedupMs !== null && html`<br><span class="badge stale" title="SCHEDULE_SPEEDUP">staging: every ${duration(r.speedupMs)}</span>`
  }`;
}

function policies(r: ScheduleRow): SafeHtml {
  const p = r.policies;
  const missed = p.missed === 'skip' ? 'skip' : `${p.missed} (window ${duration(p.catchUpWindowMs)}${p.missed === 'all' ? `, max ${p.maxCatchUp}` : ''})`;
  return html`dst gap=${p.dst.gap} fold=${p.dst.fold}<br>missed ${missed}<br>overlap ${r.overlap}`;
}

function outcome(rec: OccurrenceRecord | null, withError: boolean): SafeHtml {
  if (!rec) return html`<span class="muted">never</span>`;
  return html`${time(rec.endedAt ?? rec.nominal)}<br><span class="muted">run of</span> ${time(rec.nominal)}${
    withError && rec.error && html`<br><span class="err">${rec.error}</span>`
  }`;
}

export function healthBadge(r: ScheduleRow): SafeHtml {
  return html`<span class="badge ${r.health.status}" title="${r.health.reason}">${r.health.status}</span>`;
}

function fireNote(o: PreviewOccurrence): SafeHtml {
  return html`${o.dstTransition && html` <span class="dst" title="DST transition before this time">DST ${o.dstTransition.from} → ${o.dstTransition.to}</span>`}${
    o.kind !== 'regular' && html` <span class="dst">${o.kind}</span>`
  }`;
}

function nextFires(r: ScheduleRow): SafeHtml {
  return html`<ul class="fires">${r.next.map((o) => html`<li>${time(o.local)} <span class="muted">=</span> ${time(o.utc)}${fireNote(o)}</li>`)}</ul>`;
}

export function renderSchedules(rows: ScheduleRow[], now: Date): SafeHtml {
  const body = html`<h1>Schedules</h1>
<p class="muted">Every scheduled job of the catalog, at ${time(now.toISOString())}. Next fire times are shown in the schedule's timezone and in UTC.</p>
${
  rows.length === 0
    ? html`<p>The catalog has no scheduled jobs.</p>`
    : html`<table>
<thead><tr><th>Schedule</th><th>Queue</th><th>When</th><th>Policies</th><th>Registered</th><th>Last success</th><th>Last failure</th><th>Health</th><th>Next 5 fire times (local = UTC)</th></tr></thead>
<tbody>
${rows.map(
  (r) => html`<tr id="${r.name}">
<td><a href="${schedulePath(r.name)}">${r.name}</a></td>
<td>${r.queue}</td>
<td>${when(r)}</td>
<td>${policies(r)}</td>
<td>${r.registered ? html`<span class="badge ok">yes</span>` : html`<span class="badge stale" title="start the scheduler">no</span>`}</td>
<td>${outcome(r.lastSuccess, false)}</td>
<td>${outcome(r.lastFailure, true)}</td>
<td>${healthBadge(r)}</td>
<td>${nextFires(r)}</td>
</tr>`,
)}
</tbody>
</table>`
}`;
  return layout({ title: 'Schedules', section: 'schedules', body });
}

export function renderScheduleDetail(r: ScheduleRow, history: OccurrenceRecord[], now: Date): SafeHtml {
  const body = html`<p><a href="/schedules">← Schedules</a></p>
<h1>${r.name} ${healthBadge(r)}</h1>
<dl>
<dt>Queue</dt><dd>${r.queue}</dd>
<dt>When</dt><dd>${when(r)}</dd>
<dt>Policies</dt><dd>${policies(r)}</dd>
<dt>Registered</dt><dd>${r.registered ? 'yes' : 'no (start the scheduler)'}</dd>
<dt>Health</dt><dd>${r.health.reason}</dd>
<dt>Last success</dt><dd>${outcome(r.lastSuccess, false)}</dd>
<dt>Last failure</dt><dd>${outcome(r.lastFailure, true)}</dd>
<dt>Next fire times</dt><dd>${nextFires(r)}</dd>
</dl>
<h2>Recent occurrences <span class="muted">(newest first, the last ${HISTORY_ROWS}; at ${time(now.toISOString())})</span></h2>
${
  history.length === 0
    ? html`<p class="muted">No occurrences recorded yet.</p>`
    : html`<table>
<thead><tr><th>Nominal</th><th>Trigger</th><th>Enqueued</th><th>Started</th><th>Ended</th><th>Outcome</th><th>Attempts</th><th>Error</th></tr></thead>
<tbody>
${history.map(
  (h) => html`<tr>
<td>${time(h.nominal)}</td>
<td>${h.trigger}</td>
<td>${time(h.enqueuedAt)}</td>
<td>${time(h.startedAt)}</td>
<td>${time(h.endedAt)}</td>
<td>${outcomeBadge(h)}</td>
<td class="num">${h.attempts ?? ''}</td>
<td class="err">${h.error}</td>
</tr>`,
)}
</tbody>
</table>`
}`;
  return layout({ title: r.name, section: 'schedules', body });
}

function outcomeBadge(h: OccurrenceRecord): SafeHtml {
  if (!h.outcome) return html`<span class="badge neutral">${h.startedAt ? 'running' : 'scheduled'}</span>`;
  const cls = h.outcome === 'failed' ? 'failing' : h.outcome === 'completed' || h.outcome === 'caught-up' || h.outcome === 'manual' ? 'ok' : 'stale';
  return html`<span class="badge ${cls}">${h.outcome}</span>`;
}
