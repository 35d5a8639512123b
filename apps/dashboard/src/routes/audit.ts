import { Router, type Response } from 'express';
import { AuditQueryError, parseAuditBefore, readAudit, readRefusals, refusalCounts } from '@tickwork/operations';
import type { RedisClient } from '@tickwork/core';
import { html } from '../html.js';
import { layout } from '../pages/layout.js';
import { renderAudit, renderRefusals } from '../pages/audit.js';
import { sendPage } from './respond.js';

/** `before` continues after an entry (checked: Redis errs on an id it cannot read), `limit` 1 to 200, default 50. */
function pageQuery(q: Record<string, unknown>): { before: string | undefined; limit: number } {
  const raw = q.limit;
  if (raw !== undefined && typeof raw !== 'string') throw new AuditQueryError('limit must be given once');
  const n = raw === undefined ? 50 : /^\d{1,3}$/.test(raw) ? Number(raw) : NaN;
  if (!(n >= 1 && n <= 200)) throw new AuditQueryError('limit must be an integer from 1 to 200');
  return { before: parseAuditBefore(q.before), limit: n };
}

function badRequest(res: Response, err: unknown, back: string): void {
  if (!(err instanceof AuditQueryError)) throw err;
  const body = html`<h1>Bad request</h1><p class="err">${err.message}</p><p><a href="${back}">Audit log</a></p>`;
  sendPage(res, layout({ title: 'Bad request', section: 'audit', body }), 400);
}

/**
 * `GET /audit` and `GET /api/audit`: the actions taken on the dashboard and with the CLI, newest first, a
 * page at a time; `GET /audit/refused` and `GET /api/audit/refused`: the requests the dashboard refused,
 * counted per minute and the latest kept one by one. Open to every role: viewers see every page, and the
 * log holds who did what, never a secret.
 */
export function auditRouter(src: { redis: RedisClient; prefix: string }): Router {
  const router = Router();
  router.get('/audit', async (req, res) => {
    try {
      const q = pageQuery(req.query);
      const [page, refused] = await Promise.all([readAudit(src.redis, src.prefix, q), refusalCounts(src.redis, src.prefix)]);
      sendPage(res, renderAudit(page, q, refused.total));
    } catch (err) {
      badRequest(res, err, '/audit');
    }
  });
  router.get('/api/audit', async (req, res) => {
    try {
      res.json(await readAudit(src.redis, src.prefix, pageQuery(req.query)));
    } catch (err) {
      if (!(err instanceof AuditQueryError)) throw err;
      res.status(400).json({ error: err.message });
    }
  });
  router.get('/audit/refused', async (req, res) => {
    try {
      const q = pageQuery(req.query);
      const [page, counts] = await Promise.all([readRefusals(src.redis, src.prefix, q), refusalCounts(src.redis, src.prefix)]);
      sendPage(res, renderRefusals(page, counts, q));
    } catch (err) {
      badRequest(res, err, '/audit/refused');
    }
  });
  router.get('/api/audit/refused', async (req, res) => {
    try {
      const q = pageQuery(req.query);
      const [page, last24h] = await Promise.all([readRefusals(src.redis, src.prefix, q), refusalCounts(src.redis, src.prefix)]);
      res.json({ last24h, ...page });
    } catch (err) {
      if (!(err instanceof AuditQueryError)) throw err;
      res.status(400).json({ error: err.message });
    }
  });
  return router;
}
