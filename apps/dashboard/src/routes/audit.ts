import { Router } from 'express';
import type { RedisClient } from '@tickwork/core';
import { AuditQueryError, readAudit } from '../audit.js';
import { html } from '../html.js';
import { layout } from '../pages/layout.js';
import { renderAudit } from '../pages/audit.js';
import { sendPage } from './respond.js';

/**
 * `GET /audit` and `GET /api/audit`: the actions taken on the dashboard, newest first, a page at a time
 * (`before` continues after an entry, `limit` 1 to 200, default 50). Open to every role: viewers see
 * every page, and the log holds who did what, never a secret.
 */
export function auditRouter(src: { redis: RedisClient; prefix: string }): Router {
  const router = Router();
  const query = (q: Record<string, unknown>) => {
    const before = q.before;
    const n = q.limit === undefined ? 50 : Number(q.limit);
    if (!Number.isSafeInteger(n) || n < 1 || n > 200) throw new AuditQueryError('limit must be an integer from 1 to 200');
    if (before !== undefined && typeof before !== 'string') throw new AuditQueryError('before must be given once');
    return { before, limit: n };
  };
  router.get('/audit', async (req, res) => {
    try {
      const q = query(req.query);
      sendPage(res, renderAudit(await readAudit(src.redis, src.prefix, q), q));
    } catch (err) {
      if (!(err instanceof AuditQueryError)) throw err;
      const body = html`<h1>Bad request</h1><p class="err">${err.message}</p><p><a href="/audit">Audit log</a></p>`;
      sendPage(res, layout({ title: 'Bad request', section: 'audit', body }), 400);
    }
  });
  router.get('/api/audit', async (req, res) => {
    try {
      res.json(await readAudit(src.redis, src.prefix, query(req.query)));
    } catch (err) {
      if (!(err instanceof AuditQueryError)) throw err;
      res.status(400).json({ error: err.message });
    }
  });
  return router;
}
