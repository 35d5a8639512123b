import type { CancelRequest } from '@tickwork/operations';
import { CSRF_FIELD } from '../csrf.js';
import { html, type SafeHtml } from '../html.js';
import { layout, time, type Flash } from './layout.js';

export interface RunningJob {
  id: string;
  name: string;
  attempt: number;
  startedAt: string | null;
  progress: unknown;
  cancel: CancelRequest | undefined;
}

export interface RunningPage {
  queue: string;
  queues: string[];
  active: number;
  page: number;
  pageSize: number;
  jobs: RunningJob[];
}

const cancelPath = (queue: string) => `/jobs/${encodeURIComponent(queue)}/cancel`;

/** The Cancel form: the job id travels in the body; `token` is undefined for viewers, who get no form. */
function cancelForm(queue: string, token: string, jobId?: string): SafeHtml {
  const id = jobId === undefined ? html`<label>Job id <input name="jobId" required></label>` : html`<input type="hidden" name="jobId" value="${jobId}">`;
  return html`<form class="inline" method="post" action="${cancelPath(queue)}"><input type="hidden" name="${CSRF_FIELD}" value="${token}">${id} <input name="reason" placeholder="reason (optional)" maxlength="500" size="18"> <button type="submit" class="danger">Cancel</button></form>`;
}

/** BullMQ's progress: a number (a percentage by convention, 0 until the job reports one) or whatever object the job reported. */
function progressText(progress: unknown): string {
  if (typeof progress === 'number') return `${progress}%`;
  return progress === undefined || progress === null ? '' : (JSON.stringify(progress) ?? '');
}

function row(queue: string, j: RunningJob, token: string | undefined): SafeHtml {
  const requested = j.cancel && html`<span class="badge stale" title="requested by ${j.cancel.by} at ${j.cancel.requestedAt}">cancel requested</span>`;
  return html`<tr>
<td><code>${j.id}</code></td>
<td>${j.name}</td>
<td class="num">${j.attempt}</td>
<td>${time(j.startedAt)}</td>
<td><code>${progressText(j.progress)}</code></td>
<td>${requested} ${token !== undefined && !j.cancel && cancelForm(queue, token, j.id)}</td>
</tr>`;
}

export function renderRunning(p: RunningPage, token: string | undefined, flash: Flash | undefined): SafeHtml {
  const pages = Math.max(1, Math.ceil(p.active / p.pageSize));
  const q = encodeURIComponent(p.queue);
  const body = html`<h1>Running jobs</h1>
<p class="muted">Jobs a worker is running now, ${p.pageSize} per page, oldest first. Cancel aborts the handler's <code>ctx.signal</code>; the run ends failed as <em>cancelled</em>, is not retried and is not dead-lettered.</p>
<form method="get" action="/jobs"><label>Queue <select name="queue">${p.queues.map((name) => html`<option${name === p.queue ? html` selected` : ''}>${name}</option>`)}</select></label> <button type="submit">Show</button></form>
<h2>${p.queue}: ${p.active} running</h2>
${
  p.jobs.length === 0
    ? html`<p class="muted">No job of this queue is running${p.page > 1 ? ' on this page' : ''}.</p>`
    : html`<table>
<thead><tr><th>Job id</th><th>Job</th><th>Attempt</th><th>Started</th><th>Progress</th><th>${token !== undefined && 'Actions'}</th></tr></thead>
<tbody>${p.jobs.map((j) => row(p.queue, j, token))}</tbody>
</table>`
}
<p>${p.page > 1 && html`<a href="/jobs?queue=${q}&page=${p.page - 1}">← Previous page</a> `}${p.page < pages && html`<a rel="next" href="/jobs?queue=${q}&page=${p.page + 1}">Next page →</a>`}</p>
${
  token !== undefined &&
  html`<h2>Cancel a waiting or delayed job</h2>
<p class="muted">A job that has not started never runs: it ends failed as cancelled when a worker takes it (a delayed job when it comes due).</p>
<p>${cancelForm(p.queue, token)}</p>`
}`;
  return layout({ title: 'Running jobs', section: 'jobs', flash, body });
}
