import { CatalogScheduleError, type Schedules } from '@tickwork/schedules';
import { TickworkError, type Catalog, type Logger } from '@tickwork/core';
import express, { Router, type Request, type Response } from 'express';
import { noteAuditDetail } from '../audit.js';
import type { Csrf } from '../csrf.js';
import { html } from '../html.js';
import { layout, type Flash } from '../pages/layout.js';
import { MAX_REASON_LENGTH, schedulePath } from '../pages/schedule-actions.js';
import { sendPage } from './respond.js';

/**
 * The flash after an action travels in the query string as a code, never as text, so a crafted link
 * cannot make the dashboard show a message of the sender's choosing.
 */
export function scheduleFlash(req: Request): Flash | undefined {
  switch (req.query.flash) {
    case 'paused':
      return { kind: 'ok', text: 'Paused: its occurrences are recorded as skipped-paused until it is resumed.' };
    case 'resumed':
      return { kind: 'ok', text: 'Resumed: it fires from its next occurrence.' };
    case 'already-paused':
      return { kind: 'ok', text: 'It was already paused; nothing changed.' };
    case 'not-paused':
      return { kind: 'ok', text: 'It was not paused; nothing changed.' };
    case 'ran':
      return { kind: 'ok', text: 'Run now: one run enqueued; it shows in the history below. The next scheduled occurrence is unchanged.' };
    case 'removed':
      return { kind: 'ok', text: 'Removed the schedule and its pending occurrence.' };
    default:
      return undefined;
  }
}

/** A form value the action cannot take (a 400; nothing changed). */
export class ScheduleActionInputError extends TickworkError {
  override name = 'ScheduleActionInputError';
}

function refuse(res: Response, status: number, title: string, message: string, id: string): void {
  const body = html`<h1>${title}</h1><p class="err">${message}</p><p><a href="${schedulePath(id)}">Back to the schedule</a> · <a href="/schedules">All schedules</a></p>`;
  sendPage(res, layout({ title, section: 'schedules', body }), status);
}

/**
 * `POST /schedules/:id/{pause,resume,run,remove}`, each behind the CSRF check (Origin and form token)
 * as the dead-letter buttons. Answers with a 303 to the schedule's page (or the list, after remove).
 */
export function scheduleActionsRouter(deps: { api: Schedules; catalog: Catalog; log: Logger }, csrf: Csrf): Router {
  const router = Router();
  const form = express.urlencoded({ extended: false, limit: '4kb' });

  /** Runs `fn` on an existing schedule; an unknown id is a 404, an error of the API a 409 naming it. */
  function act(fn: (id: string, req: Request, res: Response) => Promise<string | undefined>) {
    return async (req: Request, res: Response) => {
      const id = String(req.params.id);
      // A catalog schedule is known even before a scheduler has stored it (the store then says what is missing).
      if (!deps.catalog.get(id)?.schedule && !(await deps.api.get(id))) return refuse(res, 404, 'No such schedule', `There is no schedule ${JSON.stringify(id)} (removed meanwhile?).`, id);
      try {
        const flash = await fn(id, req, res);
        // 303: the browser follows with a GET, so reloading the page does not resubmit the action.
        if (flash !== undefined) noteAuditDetail(res, { outcome: flash });
        if (flash !== undefined) res.redirect(303, `${flash === 'removed' ? '/schedules' : schedulePath(id)}?flash=${flash}`);
      } catch (err) {
        if (!(err instanceof TickworkError)) throw err;
        refuse(res, err instanceof ScheduleActionInputError ? 400 : 409, 'Not done', err.message, id);
      }
    };
  }

  router.post('/schedules/:id/pause', form, csrf.protect, act(async (id, req, res) => {
    const body = req.body as Record<string, unknown> | undefined;
    const reason = typeof body?.reason === 'string' ? body.reason.trim() : '';
    if (reason === '' || reason.length > MAX_REASON_LENGTH) {
      // Nothing changed; the page says what to fix.
      throw new ScheduleActionInputError(`a pause needs a reason of 1 to ${MAX_REASON_LENGTH} characters (it tells whoever finds the schedule paused why)`);
    }
    noteAuditDetail(res, { reason });
    const done = await deps.api.pause(id, reason);
    deps.log.info({ schedule: id, reason, changed: done }, 'dashboard: schedule paused');
    return done ? 'paused' : 'already-paused';
  }));
  router.post('/schedules/:id/resume', form, csrf.protect, act(async (id) => {
    const done = await deps.api.resume(id);
    deps.log.info({ schedule: id, changed: done }, 'dashboard: schedule resumed');
    return done ? 'resumed' : 'not-paused';
  }));
  router.post('/schedules/:id/run', form, csrf.protect, act(async (id, _req, res) => {
    const run = await deps.api.runNow(id, { by: 'dashboard' });
    noteAuditDetail(res, { jobId: run.jobId });
    deps.log.info({ schedule: id, jobId: run.jobId }, 'dashboard: schedule run now');
    return 'ran';
  }));
  router.post('/schedules/:id/remove', form, csrf.protect, act(async (id) => {
    // Refused before asking the store: a catalog schedule is code, stored by a scheduler or not.
    if (deps.catalog.get(id)?.schedule) throw new CatalogScheduleError(id, 'remove');
    await deps.api.remove(id);
    deps.log.info({ schedule: id }, 'dashboard: schedule removed');
    return 'removed';
  }));
  return router;
}
