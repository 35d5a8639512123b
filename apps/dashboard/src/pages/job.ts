import type { TrailStop } from '@tickwork/operations';
import { LOG_LINES, type JobDetail, type UnreadableJob } from '../data/job.js';
import { html, type SafeHtml } from '../html.js';
import { layout, time } from './layout.js';
import { boardJobPath, findPath, jobPath, occurrencePath } from './links.js';

function json(value: unknown): string {
  return JSON.stringify(value, null, 2) ?? 'undefined';
}

const STATE_BADGE: Record<string, string> = { completed: 'ok', failed: 'failing', active: 'neutral', delayed: 'stale', waiting: 'waiting', prioritized: 'waiting' };

function stopLabel(s: TrailStop): SafeHtml {
  const where = s.queue.endsWith('.dlq') ? 'dead letter' : 'job';
  return html`${where} <a href="${jobPath(s.queue, s.id)}"><code>${s.id}</code></a> in <code>${s.queue}</code> ${
    s.exists ? html`<span class="badge ok">there now</span>` : html`<span class="badge neutral">gone</span>`
  }`;
}

/**
 * Where the job went after this page's job, one step a line: dead-lettered as a DLQ entry, re-driven as a
 * new job, and so on. A step with no successor whose stop is gone ends the trail honestly: "gone".
 */
export function trailSection(trail: readonly TrailStop[]): SafeHtml {
  const onward = trail.slice(1);
  if (onward.length === 0) return html``;
  const last = trail[trail.length - 1] as TrailStop;
  // The job asked for is there now, yet a step is recorded: an earlier job had its id (ids can be reused).
  const earlier = trail[0]?.exists === true;
  return html`<h2 id="trail">Where it went</h2>
${earlier && html`<p class="muted">An earlier job with this id left the queue:</p>`}
<ol class="trail">${onward.map((s) => html`<li>${s.via?.to === 'dead-letter' ? 'dead-lettered' : 're-driven'} ${time(s.via?.at)} as ${stopLabel(s)}</li>`)}</ol>
${!last.exists && html`<p class="muted">The last of these is gone too: ${last.queue.endsWith('.dlq') ? 'the dead letter was purged' : 'the job was removed by its retention (removeOnComplete / removeOnFail)'}.</p>`}`;
}

function occurrenceLine(j: JobDetail): SafeHtml {
  const o = j.occurrence;
  if (!o) return html`<span class="muted">no: an on-demand job</span>`;
  return html`<a href="${occurrencePath(o.schedule, o.occurrence)}">${o.occurrence}</a> <span class="muted">of schedule</span> ${o.schedule}`;
}

function redriveSection(j: JobDetail): SafeHtml {
  const r = j.redrive;
  if (!r) return html``;
  return html`<h2>Earlier trips through the DLQ</h2>
<p class="muted">This job is re-drive ${r.redriveCount} of dead letter <code>${r.rootDlqJobId}</code>; it keeps the idempotency key <code>${r.idempotencyKey}</code>.</p>
<table>
<thead><tr><th>Job id</th><th>Reason</th><th>Attempts</th><th>Dead-lettered</th><th>Re-driven</th></tr></thead>
<tbody>${r.history.map(
    (h) => html`<tr><td><a href="${jobPath(j.queue, h.jobId)}"><code>${h.jobId}</code></a></td><td class="err wrap">${h.failureReason}</td><td class="num">${h.attemptsMade}</td><td>${time(h.deadLetteredAt)}</td><td>${time(h.redrivenAt)}</td></tr>`,
  )}</tbody>
</table>`;
}

function outcomeSection(j: JobDetail): SafeHtml {
  return html`${j.state === 'completed' && html`<h2>Result</h2><pre id="result">${json(j.returnvalue)}</pre>`}
${
  j.failedReason !== null &&
  html`<h2>Error</h2><p class="err" id="error">${j.failedReason}</p>
${
  j.stacktrace.length === 0
    ? html`<p class="muted">No stack (the thrown value was not an Error).</p>`
    : j.stacktrace.map((s, i) => html`<h3>Stack of failed attempt ${i + 1} of those kept</h3><pre>${s}</pre>`)
}`
}`;
}

/** A job in full: what it carries, how its attempts went, its logs, and where it came from and went. */
export function renderJob(j: JobDetail, trail: readonly TrailStop[]): SafeHtml {
  const progress = j.progress === 0 || j.progress === undefined ? html`<span class="muted">-</span>` : html`<code>${json(j.progress)}</code>`;
  const body = html`<h1>${j.name} <span class="muted">in</span> <code>${j.queue}</code> <span class="badge ${STATE_BADGE[j.state] ?? 'neutral'}" id="state">${j.state}</span></h1>
<p><a href="${boardJobPath(j.queue, j.id)}">On Bull Board</a>${trail.length > 1 && html` · <a href="#trail">Where it went</a>`}</p>
<dl>
<dt>Job id</dt><dd><code>${j.id}</code></dd>
<dt>Scheduled run</dt><dd>${occurrenceLine(j)}</dd>
<dt>Attempts</dt><dd>${j.attemptsMade} made, ${j.attemptsStarted} started</dd>
<dt>Added</dt><dd>${time(j.addedAt)}${j.delayMs > 0 && html` <span class="muted">(delayed ${j.delayMs} ms)</span>`}</dd>
<dt>Last started</dt><dd>${time(j.processedAt)}</dd>
<dt>Finished</dt><dd>${time(j.finishedAt)}</dd>
<dt>Progress</dt><dd>${progress}</dd>
</dl>
${outcomeSection(j)}
${trailSection(trail)}
${redriveSection(j)}
<h2>Data</h2>
<pre id="data">${json(j.data)}</pre>
<h2>Logs <span class="muted">(${j.logCount}${j.logCount > LOG_LINES ? `, the first ${LOG_LINES} shown` : ''})</span></h2>
${j.logs.length === 0 ? html`<p class="muted">No log lines (a handler adds them with job.log).</p>` : html`<pre id="logs">${j.logs.join('\n')}</pre>`}
<h2>Options</h2>
<pre>${json(j.opts)}</pre>`;
  return layout({ title: `${j.name} ${j.id}`, section: 'find', body });
}

/** A job BullMQ cannot read: its raw fields as text, so the operator sees what is there. */
export function renderUnreadableJob(j: UnreadableJob, trail: readonly TrailStop[]): SafeHtml {
  const body = html`<h1><code>${j.id}</code> <span class="muted">in</span> <code>${j.queue}</code> <span class="badge failing">unreadable</span></h1>
<p><a href="${boardJobPath(j.queue, j.id)}">On Bull Board</a></p>
<p class="err">BullMQ cannot read this job (${j.reason}). Its fields as stored:</p>
<table>
<thead><tr><th>Field</th><th>Value</th></tr></thead>
<tbody>${Object.entries(j.fields).map(([k, v]) => html`<tr><td><code>${k}</code></td><td class="wrap"><pre>${v}</pre></td></tr>`)}</tbody>
</table>
${trailSection(trail)}`;
  return layout({ title: `${j.id} (unreadable)`, section: 'find', body });
}

/** No job with that id in the queue; `trail` (its first stop: the id asked for) may say where it went. */
export function renderGoneJob(queue: string, id: string, trail: readonly TrailStop[]): SafeHtml {
  const known = trail.length > 1;
  const body = html`<h1><code>${id}</code> <span class="muted">is not in</span> <code>${queue}</code></h1>
${
  known
    ? html`<p>The job left its queue.</p>${trailSection(trail)}`
    : html`<p>No job with this id is in the queue: never added, or removed by its retention (removeOnComplete / removeOnFail). <a href="${findPath(id)}">Look for it everywhere</a>.</p>`
}`;
  return layout({ title: 'Job not found', section: 'find', body });
}
