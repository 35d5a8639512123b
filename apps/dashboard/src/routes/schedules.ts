import { Router } from 'express';
import { loadHistory, loadSchedule, loadSchedules, type ScheduleSource } from '../data/schedules.js';
import { html } from '../html.js';
import { layout } from '../pages/layout.js';
import { renderScheduleDetail, renderSchedules } from '../pages/schedules.js';
import { sendPage } from './respond.js';

/** `GET /schedules`, `GET /schedules/:name` and `GET /api/schedules` (same rows as JSON). */
export function schedulesRouter(src: ScheduleSource): Router {
  const router = Router();
  router.get('/schedules', async (_req, res) => {
    const now = new Date();
    sendPage(res, renderSchedules(await loadSchedules(src, now), now));
  });
  router.get('/schedules/:name', async (req, res) => {
    const now = new Date();
    const row = await loadSchedule(src, req.params.name, now);
    if (!row) {
      const body = html`<h1>No such schedule</h1><p>The catalog has no scheduled job named <code>${req.params.name}</code>. <a href="/schedules">All schedules</a></p>`;
      return sendPage(res, layout({ title: 'Not found', section: 'schedules', body }), 404);
    }
    sendPage(res, renderScheduleDetail(row, await loadHistory(src, row.name), now));
  });
  router.get('/api/schedules', async (_req, res) => {
    res.json(await loadSchedules(src));
  });
  return router;
}
