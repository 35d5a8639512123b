import { HISTORY_CAP, slowAfterMsOf, type OccurrenceRecord, type PreviewOccurrence, type ScheduleView } from '@tickwork/schedules';
import type { SchedulePolicies } from '@tickwork/core';
import { HISTORY_ROWS, type ScheduleRow } from '../data/schedules.js';
import { html, type SafeHtml } from '../html.js';
import { duration, elapsed, layout, offsetLabel, time, type Flash } from './layout.js';
import { jobPath, occurrenceAnchor } from './links.js';
import { pausedState, scheduleActions, schedulePath } from './schedule-actions.js';

export { schedulePath };


function when(r: ScheduleRow): SafeHtml {
  const rule = r.pattern !== null ? html`cron <code>${r.pattern}</code>` : html`every ${duration(r.everyMs ?? 0)}`;
  return html`<span class="nowrap">${rule}</span><br><span class="muted">tz</span> ${r.tz}${
    r.speedupMs !== null && html`<br><span class="badge stale" title="SCHEDULE_SPEEDUP">staging: every ${duration(r.speedupMs)}</span>`
  }`;
}

export function policies(r: { policies: SchedulePolicies; spreadOffsetMs: number }): SafeHtml {
  const p = r.policies;
  const missed = p.missed === 'skip' ? 'skip' : `${p.missed} (window ${duration(p.catchUpWindowMs)}${p.missed === 'all' ? `, max ${p.maxCatchUp}` : ''})`;
  return html`<span class="nowrap">dst gap=${p.dst.gap} fold=${p.dst.fold}</span><br>missed ${missed}<br><span class="nowrap">overlap ${p.overlap}</span>${
    p.spreadMs !== null && html`<br><span class="nowrap" title="fires this long after each pattern time, the same every time">spread ${duration(p.spreadMs)}: +${elapsed(r.spreadOffsetMs)}</span>`
  }`;
}

/** When it ended; in full (`detail`) also which occurrence it was a run of. */
function outcome(rec: OccurrenceRecord | null, withError: boolean, detail = false): SafeHtml {
  if (!rec) return html`<span class="muted">never</span>`;
  return html`${time(rec.endedAt ?? rec.nominal)}${detail && html` <span class="muted">(run of ${time(rec.nominal)})</span>`}${
    withError && rec.error && html`<br><span class="err">${rec.error}</span>`
  }`;
}

/** The status, plus `stale` when a failing schedule is also stale (both matter to whoever looks). */
export function healthBadge(r: ScheduleRow): SafeHtml {
  const h = r.health;
  return html`<span class="badge ${h.status}" title="${h.reason}">${h.status}</span>${
    h.status === 'failing' && h.stale && html` <span class="badge stale" title="no success within 2 intervals">stale</span>`
  }`;
}

function registration(r: ScheduleRow): SafeHtml {
  return r.registered
    ? html`<span class="badge ok" title="a scheduler has registered it">registered</span>`
    : html`<span class="badge stale" title="no scheduler has registered it yet: start the scheduler">not registered</span>`;
}

function fireNote(o: PreviewOccurrence): SafeHtml {
  return html`${o.dstTransition && html` <span class="dst" title="DST transition before this time">DST ${o.dstTransition.from} → ${o.dstTransition.to}</span>`}${
    o.kind !== 'regular' && html` <span class="dst">${o.kind}</span>`
  }`;
}

/**
 * Local wall time with its offset, then the UTC time (its date only when it differs), e.g.
 * `2026-11-30 08:00 UTC-05:00 = 13:00 UTC`: five of them must fit a table cell.
 */
function fireTime(o: PreviewOccurrence): SafeHtml {
  const [localDate = '', localRest = ''] = o.local.split('T');
  const localClock = localRest.slice(0, 8).replace(/:00$/, '');
  const offset = localRest.slice(12) || 'Z';
  const [utcDate = '', utcRest = ''] = o.utc.split('T');
  const utcClock = `${utcRest.slice(0, 8).replace(/:00$/, '')} UTC`;
  const utcLabel = utcDate === localDate ? utcClock : `${utcDate.slice(5)} ${utcClock}`;
  return html`<time datetime="${o.local}">${localDate} ${localClock} <span class="muted">${offsetLabel(offset)}</span></time>${
    offset !== 'Z' && offset !== '+00:00' && html` <span class="muted">=</span> <time datetime="${o.utc}">${utcLabel}</time>`
  }`;
}

function nextFires(r: ScheduleRow): SafeHtml {
  return html`<ul class="fires">${r.next.map((o) => html`<li>${fireTime(o)}${fireNote(o)}</li>`)}</ul>`;
}

/** The catalog's schedules, then (when given) the section with one page of runtime schedules. */
export function renderSchedules(rows: ScheduleRow[], now: Date, runtime?: SafeHtml, flash?: Flash): SafeHtml {
  const body = html`<h1>Schedules</h1>
<h2>Catalog schedules</h2>
<p class="muted">Every scheduled job of the catalog, at ${time(now.toISOString())}. Next fire times are shown in the schedule's timezone and in UTC.</p>
${
  rows.length === 0
    ? html`<p>The catalog has no scheduled jobs.</p>`
    : html`<div class="scroll"><table>
<thead><tr><th>Schedule / queue</th><th>When</th><th>Policies</th><th>Health</th><th>Last success</th><th>Last failure</th><th>Next 5 fire times</th></tr></thead>
<tbody>
${rows.map(
  (r) => html`<tr id="${r.name}">
<td><a href="${schedulePath(r.name)}">${r.name}</a><br><span class="muted">queue</span> ${r.queue}</td>
<td>${when(r)}</td>
<td>${policies(r)}</td>
<td>${healthBadge(r)}<br>${registration(r)}</td>
<td>${outcome(r.lastSuccess, false)}</td>
<td class="wrap">${outcome(r.lastFailure, true)}</td>
<td>${nextFires(r)}</td>
</tr>`,
)}
</tbody>
</table></div>`
}
${runtime}`;
  return layout({ title: 'Schedules', section: 'schedules', flash, body });
}

/** A catalog schedule's page; `state` is its record in the schedule store (paused or not) and the CSRF token for its buttons. */
export function renderScheduleDetail(
  r: ScheduleRow,
  history: OccurrenceRecord[],
  now: Date,
  state?: { view: ScheduleView; token: string | undefined; flash?: Flash | undefined },
  charts?: SafeHtml,
): SafeHtml {
  const slowAfterMs = slowAfterMsOf(r.policies, r.health.intervalMs);
  const body = html`<p><a href="/schedules">← Schedules</a></p>
<h1>${r.name} ${healthBadge(r)}${state?.view.paused && html` <span class="badge stale">paused</span>`}</h1>
${state ? scheduleActions(state.view, state.token) : html`<p class="muted" id="not-stored">No scheduler has stored this schedule yet: Pause, Resume and Run now appear once one has started.</p>`}
<dl>
${state && html`<dt>State</dt><dd>${pausedState(state.view)}</dd>`}
<dt>Queue</dt><dd>${r.queue}</dd>
<dt>When</dt><dd>${when(r)}</dd>
<dt>Policies</dt><dd>${policies(r)}</dd>
<dt>Registered</dt><dd>${r.registered ? 'yes' : 'no (start the scheduler)'}</dd>
<dt>Health</dt><dd>${r.health.reason}</dd>
<dt>Last success</dt><dd>${outcome(r.lastSuccess, false, true)}</dd>
<dt>Last failure</dt><dd>${outcome(r.lastFailure, true, true)}</dd>
<dt>Next fire times</dt><dd>${nextFires(r)}</dd>
</dl>
${charts}
${historySection(history, now, slowAfterMs, state?.view.historyCap ?? HISTORY_CAP, r.queue)}`;
  return layout({ title: r.name, section: 'schedules', flash: state?.flash, body });
}

/** How many of the occurrences kept the page shows: `kept` is the schedule's history cap, null when unknown. */
function shownOfKept(kept: number | null): string {
  if (kept === null) return `at most the last ${HISTORY_ROWS}`;
  return kept <= HISTORY_ROWS ? `the last ${kept}: all it keeps` : `the last ${HISTORY_ROWS} of the ${kept} it keeps`;
}

/**
 * The last HISTORY_ROWS occurrences of a schedule (fewer when it keeps fewer: `kept`), newest first; with
 * `queue`, each links to its job.
 */
export function historySection(history: OccurrenceRecord[], now: Date, slowAfterMs: number, kept: number | null, queue?: string): SafeHtml {
  return html`<h2>Recent occurrences <span class="muted">(newest first, ${shownOfKept(kept)}; at ${time(now.toISOString())})</span></h2>
${
  history.length === 0
    ? html`<p class="muted">No occurrences recorded yet.</p>`
    : html`<table>
<thead><tr><th>Nominal</th><th>Trigger</th><th>Job</th><th>Enqueued</th><th>Started</th><th>Ended</th><th>Outcome</th><th>Attempts</th><th>Error</th></tr></thead>
<tbody>
${history.map(
  (h) => html`<tr id="${occurrenceAnchor(h.id)}">
<td>${time(h.nominal)}</td>
<td>${h.trigger}${h.by !== undefined && html` <span class="muted">by ${h.by}</span>`}</td>
<td class="wrap">${h.jobId !== undefined && queue !== undefined ? html`<a href="${jobPath(queue, h.jobId)}"><code>${h.jobId}</code></a>` : html`<span class="muted">-</span>`}</td>
<td>${time(h.enqueuedAt)}</td>
<td>${time(h.startedAt)}</td>
<td>${time(h.endedAt)}</td>
<td>${outcomeBadge(h, now, slowAfterMs)}</td>
<td class="num">${h.attempts ?? ''}</td>
<td class="err wrap">${h.error}</td>
</tr>`,
)}
</tbody>
</table>`
}`;
}

/** A run in progress longer than the schedule's slowAfter is marked slow, as the watchdog alerts on it. */
function outcomeBadge(h: OccurrenceRecord, now: Date, slowAfterMs: number): SafeHtml {
  if (!h.outcome && h.startedAt && !h.endedAt) {
    const runningForMs = now.getTime() - Date.parse(h.startedAt);
    if (runningForMs > slowAfterMs) {
      const title = `running for ${Math.round(runningForMs / 60_000)} min, longer than slowAfter (${Math.round(slowAfterMs / 60_000)} min)`;
      return html`<span class="badge stale" title="${title}">running (slow)</span>`;
    }
  }
  if (!h.outcome) return html`<span class="badge neutral">${h.startedAt ? 'running' : 'scheduled'}</span>`;
  const cls = h.outcome === 'failed' ? 'failing' : h.outcome === 'completed' || h.outcome === 'caught-up' || h.outcome === 'manual' ? 'ok' : 'stale';
  // A manual or catch-up run that completed is a success like any other: the Trigger column says how it
  // came about, so the outcome says only how it ended (the stored outcome stays in the title).
  if (h.outcome === 'manual' || h.outcome === 'caught-up') return html`<span class="badge ${cls}" title="recorded as ${h.outcome}">completed</span>`;
  return html`<span class="badge ${cls}">${h.outcome}</span>`;
}
