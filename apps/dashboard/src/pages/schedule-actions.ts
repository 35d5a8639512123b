import type { ScheduleView } from '@tickwork/schedules';
import { html, type SafeHtml } from '../html.js';
import { action } from './forms.js';
import { time } from './layout.js';

/** A schedule's page; ids are the application's own text, so always encoded. */
export function schedulePath(id: string): string {
  return `/schedules/${encodeURIComponent(id)}`;
}

/** `active`, or since when and why it is paused. */
export function pausedState(v: Pick<ScheduleView, 'paused'>): SafeHtml {
  return v.paused ? html`<span class="badge stale">paused</span> since ${time(v.paused.at)}: ${v.paused.reason}` : html`<span class="badge ok">active</span>`;
}

export const MAX_REASON_LENGTH = 500;

/**
 * Every button that changes a schedule, in one place: Pause (with its reason) or Resume, Run now, and for
 * a runtime schedule Remove (one click further away, as purging a dead letter). A page that must not
 * offer actions (a read-only role) renders nothing instead of calling this.
 */
export function scheduleActions(v: Pick<ScheduleView, 'id' | 'source' | 'paused'>, token: string | undefined): SafeHtml {
  if (token === undefined) return html``; // a viewer: read only
  const path = schedulePath(v.id);
  const reason = html`<label>Reason <input name="reason" required maxlength="${MAX_REASON_LENGTH}" placeholder="why, for whoever finds it paused"></label> `;
  return html`<div class="actions">${
    v.paused ? action(`${path}/resume`, 'Resume', token) : action(`${path}/pause`, 'Pause', token, false, reason)
  } ${action(`${path}/run`, 'Run now', token)}${
    v.source === 'runtime' && html` <details class="inline"><summary>Remove…</summary>${action(`${path}/remove`, 'Remove for good', token, true)}</details>`
  }</div>`;
}
