import type { CancelRequest } from '@tickwork/operations';
import { CSRF_FIELD } from '../csrf.js';
import { html, type SafeHtml } from '../html.js';
import { elapsed, layout, time, type Flash } from './layout.js';
import { jobPath } from './links.js';

export interface RunningJob {
  queue: string;
  id: string;
  name: string;
  attempt: number;
  startedAt: string | null;
  progress: unknown;
  cancel: CancelRequest | undefined;
}

export interface RunningPage {
  /** The queue shown, or null: every queue's running jobs, oldest first. */
  queue: string | null;
  queues: string[];
  /** Running jobs in the queue(s) shown. */
  active: number;
  page: number;
  lastPage: number;
  pageSize: number;
  jobs: RunningJob[];
  /** When the page was read: the elapsed times count to it. */
  now: number;
}

const cancelPath = (queue: string) => `/jobs/${encodeURIComponent(queue)}/cancel`;

/** The Cancel form: the job id travels in the body; `token` is undefined for viewers, who get no form. */
function cancelForm(queue: string, token: string, view: 'all' | 'queue', jobId?: string): SafeHtml {
  const id = jobId === undefined ? html`<label>Job id <input name="jobId" required></label>` : html`<input type="hidden" name="jobId" value="${jobId}">`;
  return html`<form class="inline" method="post" action="${cancelPath(queue)}"><input type="hidden" name="${CSRF_FIELD}" value="${token}"><input type="hidden" name="view" value="${view}">${id} <input name="reason" placeholder="reason (optional)" maxlength="500" size="18"> <button type="submit" class="danger">Cancel</button></form>`;
}

/** BullMQ's progress: a number (a percentage by convention, 0 until the job reports one) or whatever object the job reported. */
function progressText(progress: unknown): string {
  if (typeof progress === 'number') return `${progress}%`;
  return progress === undefined || progress === null ? '' : (JSON.stringify(progress) ?? '');
}

/** A run whose cancel was requested is still running until its handler stops: it shows as cancelling. */
function state(j: RunningJob): SafeHtml {
  if (!j.cancel) return html`<span class="badge ok">running</span>`;
  return html`<span class="badge stale" title="cancel requested by ${j.cancel.by} at ${j.cancel.requestedAt}${j.cancel.reason ? `: ${j.cancel.reason}` : ''}">cancelling</span>`;
}

function row(p: RunningPage, j: RunningJob, token: string | undefined): SafeHtml {
  const started = j.startedAt === null ? null : Date.parse(j.startedAt);
  return html`<tr>
${p.queue === null && html`<td><a href="/jobs?queue=${encodeURIComponent(j.queue)}">${j.queue}</a></td>`}
<td><a href="${jobPath(j.queue, j.id)}"><code>${j.id}</code></a></td>
<td>${j.name}</td>
<td>${state(j)}</td>
<td class="num">${j.attempt}</td>
<td>${time(j.startedAt)}</td>
<td class="num">${started === null ? '' : elapsed(p.now - started)}</td>
<td><code>${progressText(j.progress)}</code></td>
<td>${token !== undefined && !j.cancel && cancelForm(j.queue, token, p.queue === null ? 'all' : 'queue', j.id)}</td>
</tr>`;
}

function pageLink(p: RunningPage, page: number): string {
  return `/jobs?${p.queue === null ? '' : `queue=${encodeURIComponent(p.queue)}&`}page=${page}`;
}

export function renderRunning(p: RunningPage, token: string | undefined, flash: Flash | undefined): SafeHtml {
  const option = (value: string, label: string) => html`<option value="${value}"${value === (p.queue ?? '') ? html` selected` : ''}>${label}</option>`;
  const body = html`<h1>Running jobs</h1>
<p class="muted">Jobs a worker is running now, ${p.pageSize} per page, oldest first. Cancel aborts the handler's <code>ctx.signal</code>; the run shows as <em>cancelling</em> until its handler stops, then ends failed as <em>cancelled</em>, is not retried and is not dead-lettered.</p>
<form method="get" action="/jobs"><label>Queue <select name="queue">${option('', 'every queue')}${p.queues.map((name) => option(name, name))}</select></label> <button type="submit">Show</button></form>
<h2>${p.queue ?? 'Every queue'}: ${p.active} running</h2>
${
  p.jobs.length === 0
    ? html`<p class="muted">No job${p.queue !== null && ' of this queue'} is running${p.page > 1 ? ' on this page' : ''}.</p>`
    : html`<table>
<thead><tr>${p.queue === null && html`<th>Queue</th>`}<th>Job id</th><th>Job</th><th>State</th><th>Attempt</th><th>Started</th><th>Running for</th><th>Progress</th><th>${token !== undefined && 'Actions'}</th></tr></thead>
<tbody>${p.jobs.map((j) => row(p, j, token))}</tbody>
</table>`
}
<p>${p.page > 1 && html`<a href="${pageLink(p, p.page - 1)}">← Previous page</a> `}${p.page < p.lastPage && html`<a rel="next" href="${pageLink(p, p.page + 1)}">Next page →</a>`}</p>
${
  token !== undefined &&
  p.queue !== null &&
  html`<h2>Cancel a waiting or delayed job</h2>
<p class="muted">A job that has not started never runs: it ends failed as cancelled when a worker takes it (a delayed job when it comes due).</p>
<p>${cancelForm(p.queue, token, 'queue')}</p>`
}`;
  return layout({ title: 'Running jobs', section: 'jobs', flash, body });
}
