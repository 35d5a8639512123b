import { readScheduleTimeline } from '@tickwork/operations';
import type { Schedules } from '@tickwork/schedules';
import { Router, type Request, type Response } from 'express';
import { signedIn } from '../basic-auth.js';
import type { Csrf } from '../csrf.js';
import { loadRemovedSchedule, loadRuntimePage, loadScheduleState, parseRuntimeQuery, ScheduleQueryError } from '../data/runtime-schedules.js';
import { loadHistory, loadSchedule, loadSchedules, type ScheduleSource } from '../data/schedules.js';
import { html } from '../html.js';
import { layout } from '../pages/layout.js';
import { renderRemovedDetail, renderRuntimeDetail, renderRuntimeSection } from '../pages/runtime-schedules.js';
import { renderScheduleDetail, renderSchedules } from '../pages/schedules.js';
import { renderScheduleCharts } from '../pages/schedule-charts.js';
import { chartRange } from './overview.js';
import { sendPage } from './respond.js';
import { scheduleFlash } from './schedule-actions.js';

export interface SchedulesDeps extends ScheduleSource {
  api: Schedules;
}

function notFound(res: Response, id: string): void {
  const body = html`<h1>No such schedule</h1><p>There is no catalog or runtime schedule <code>${id}</code>. <a href="/schedules">All schedules</a></p>`;
  sendPage(res, layout({ title: 'Not found', section: 'schedules', body }), 404);
}

/**
 * `GET /schedules` (the catalog's schedules, then one page of runtime schedules), `GET /schedules/:id`
 * (either kind, with its buttons), and the JSON twins: `GET /api/schedules` (the catalog's rows),
 * `GET /api/runtime-schedules` (one page and the count) and `GET /api/schedules/:id`.
 */
export function schedulesRouter(deps: SchedulesDeps, csrf: Csrf): Router {
  /** Viewers get no token, so their pages show no action buttons. */
  const tokenFor = (res: Response): string | undefined => (signedIn(res).role === 'admin' ? csrf.token : undefined);
  const router = Router();
  const jobs = deps.catalog.jobs.map((j) => j.name).sort();

  router.get('/schedules', async (req: Request, res) => {
    try {
      const now = new Date();
      const query = parseRuntimeQuery(req.query);
      const [rows, page] = await Promise.all([loadSchedules(deps, now), loadRuntimePage(deps.api, query)]);
      sendPage(res, renderSchedules(rows, now, renderRuntimeSection({ page, query, jobs }), scheduleFlash(req)));
    } catch (err) {
      if (!(err instanceof ScheduleQueryError)) throw err;
      const body = html`<h1>Bad listing</h1><p class="err">${err.message}</p><p><a href="/schedules">All schedules</a></p>`;
      sendPage(res, layout({ title: 'Bad request', section: 'schedules', body }), 400);
    }
  });
  router.get('/schedules/:id', async (req, res) => {
    const now = new Date();
    const id = String(req.params.id);
    const range = chartRange(req, res, '24h');
    if (!range) return;
    const [row, state] = await Promise.all([loadSchedule(deps, id, now), loadScheduleState(deps.api, deps.redis, deps.prefix, id)]);
    const flash = scheduleFlash(req);
    if (row) {
      // A catalog schedule the scheduler has not stored yet has no record to pause: its page shows no buttons.
      const withState = state && { view: state.view, token: tokenFor(res), flash };
      const [history, timeline] = await Promise.all([loadHistory(deps, row.name), readScheduleTimeline(deps.redis, deps.prefix, row.name, range, { now: now.getTime() })]);
      return sendPage(res, renderScheduleDetail(row, history, now, withState, renderScheduleCharts(timeline)));
    }
    if (!state) {
      const removed = await loadRemovedSchedule(deps.api, deps.redis, deps.prefix, id);
      return removed ? sendPage(res, renderRemovedDetail(removed.removed, removed.history, now)) : notFound(res, id);
    }
    sendPage(res, renderRuntimeDetail(state.view, state.history, now, tokenFor(res), flash));
  });

  router.get('/api/schedules', async (_req, res) => {
    res.json(await loadSchedules(deps));
  });
  router.get('/api/runtime-schedules', async (req, res) => {
    try {
      res.json(await loadRuntimePage(deps.api, parseRuntimeQuery(req.query)));
    } catch (err) {
      if (!(err instanceof ScheduleQueryError)) throw err;
      res.status(400).json({ error: err.message });
    }
  });
  router.get('/api/schedules/:id', async (req, res) => {
    const id = String(req.params.id);
    const state = await loadScheduleState(deps.api, deps.redis, deps.prefix, id);
    if (state) return void res.json({ ...state.view, history: state.history });
    // A catalog schedule no scheduler has stored yet: the catalog's row, as /api/schedules has it.
    const row = await loadSchedule(deps, id);
    if (row) return void res.json({ ...row, stored: false, history: await loadHistory(deps, id) });
    // Removed, its history still kept: the definition it had (when recorded), marked `removed`.
    const gone = await loadRemovedSchedule(deps.api, deps.redis, deps.prefix, id);
    if (gone) {
      const { definition, removedAt, expiresAt } = gone.removed;
      return void res.json({ ...definition, id, removed: { at: removedAt, historyExpiresAt: expiresAt }, history: gone.history });
    }
    res.status(404).json({ error: `no schedule ${JSON.stringify(id)}` });
  });
  return router;
}
