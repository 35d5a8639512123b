import type { FindHit } from '@tickwork/operations';
import { html, type SafeHtml } from '../html.js';
import { deadLetterPath } from './dead-letters.js';
import { layout } from './layout.js';
import { jobPath } from './links.js';
import { schedulePath } from './schedule-actions.js';

/** Where a hit's page is. */
export function hitPath(hit: FindHit): string {
  if (hit.kind === 'job') return jobPath(hit.queue, hit.id);
  if (hit.kind === 'dead-letter') return deadLetterPath(hit.queue, hit.id);
  return schedulePath(hit.id);
}

function hitLabel(hit: FindHit): SafeHtml {
  if (hit.kind === 'job') return html`job in <code>${hit.queue}</code>${!hit.exists && html` <span class="muted">(gone from the queue: where it went)</span>`}`;
  if (hit.kind === 'dead-letter') return html`dead letter in <code>${hit.queue}.dlq</code>`;
  return html`${hit.source} schedule`;
}

/** Every thing with the id (one hit redirects straight to its page instead). */
export function renderFindResults(id: string, hits: readonly FindHit[]): SafeHtml {
  const body = html`<h1>Find <code>${id}</code></h1>
${
  hits.length === 0
    ? html`<p id="no-match">No job, dead letter or schedule has this id. A job is kept after it ends only as its queue's retention says (removeOnComplete / removeOnFail); where a job went after a final failure or a re-drive is kept 30 days.</p>`
    : html`<p>${hits.length} things have this id:</p><ul id="hits">${hits.map((h) => html`<li><a href="${hitPath(h)}"><code>${id}</code></a>: ${hitLabel(h)}</li>`)}</ul>`
}`;
  return layout({ title: `Find ${id}`, section: 'find', body });
}

/** `/find` with no id: what the search box takes. */
export function renderFindStart(): SafeHtml {
  const body = html`<h1>Find</h1><p>Type a job id, a dead-letter id or a schedule id in the search box above: every queue, every dead-letter queue and the schedules are searched for it.</p>`;
  return layout({ title: 'Find', section: 'find', body });
}

/** A search the dashboard cannot run (an empty id, several, too long, control characters). */
export function renderBadFind(message: string): SafeHtml {
  const body = html`<h1>Find</h1><p class="err">${message}</p><p class="muted">Type a job id, a dead-letter id or a schedule id in the search box above.</p>`;
  return layout({ title: 'Bad search', section: 'find', body });
}
