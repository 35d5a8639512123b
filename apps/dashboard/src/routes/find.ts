import { checkedFindId, findById, FindInputError } from '@tickwork/operations';
import type { Catalog, QueueSet, RedisClient } from '@tickwork/core';
import type { Schedules } from '@tickwork/schedules';
import { Router, type Request, type Response } from 'express';
import { originQueues } from '../data/dead-letters.js';
import { loadJob } from '../data/job.js';
import { html } from '../html.js';
import { hitPath, renderBadFind, renderFindResults, renderFindStart } from '../pages/find.js';
import { renderGoneJob, renderJob, renderUnreadableJob } from '../pages/job.js';
import { layout } from '../pages/layout.js';
import { jobPath } from '../pages/links.js';
import { sendPage } from './respond.js';

export interface FindDeps {
  catalog: Catalog;
  queues: QueueSet;
  redis: RedisClient;
  api: Pick<Schedules, 'get'>;
}

/**
 * `GET /find?id=` (the search box on every page: one match goes straight to its page, several are listed),
 * `GET /api/find?id=` (the matches as JSON) and `GET /jobs/:queue/:id` (a job's page). Reads only: viewers
 * use them as admins do. An id no job can have is a 400 naming the problem.
 */
export function findRouter(deps: FindDeps): Router {
  const router = Router();
  const search = async (raw: unknown) => {
    const queueNames = await originQueues(deps);
    return findById({ queues: deps.queues, queueNames, schedules: deps.api, catalogSchedules: deps.catalog.scheduled().map((j) => j.name) }, checkedFindId(raw));
  };

  router.get('/find', async (req: Request, res: Response) => {
    if (req.query.id === undefined) return sendPage(res, renderFindStart());
    try {
      const id = checkedFindId(req.query.id);
      const hits = await search(id);
      if (hits.length === 1) return res.redirect(303, hitPath(hits[0] as (typeof hits)[number]));
      sendPage(res, renderFindResults(id, hits), hits.length === 0 ? 404 : 200);
    } catch (err) {
      if (!(err instanceof FindInputError)) throw err;
      sendPage(res, renderBadFind(err.message), 400);
    }
  });
  router.get('/api/find', async (req, res) => {
    try {
      const hits = await search(req.query.id);
      res.json({ hits: hits.map((h) => ({ ...h, path: hitPath(h) })) });
    } catch (err) {
      if (!(err instanceof FindInputError)) throw err;
      res.status(400).json({ error: err.message });
    }
  });

  router.get('/jobs/:queue/:id', async (req, res) => {
    const queue = String(req.params.queue);
    let id: string;
    try {
      id = checkedFindId(req.params.id);
    } catch (err) {
      if (!(err instanceof FindInputError)) throw err;
      return sendPage(res, renderBadFind(err.message), 400);
    }
    const origins = await originQueues(deps);
    // A DLQ's jobs are dead letters: their own page says more (the entry, its buttons).
    if (queue.endsWith('.dlq') && origins.includes(queue.slice(0, -'.dlq'.length))) return res.redirect(303, jobPath(queue, id));
    // Only queues tickwork knows: a URL must not make the QueueSet open a Queue for any name it likes.
    if (!origins.includes(queue)) {
      const body = html`<h1>No such queue</h1><p>tickwork knows no queue named <code>${queue}</code>.</p>`;
      return sendPage(res, layout({ title: 'Not found', section: 'find', body }), 404);
    }
    const found = await loadJob(deps.queues, queue, id);
    if (found.kind === 'job') return sendPage(res, renderJob(found.job, found.trail));
    if (found.kind === 'unreadable') return sendPage(res, renderUnreadableJob(found.job, found.trail));
    // Gone: a 404 unless the trail says where it went (then the page has the answer).
    sendPage(res, renderGoneJob(queue, id, found.trail), found.trail.length > 1 ? 200 : 404);
  });
  return router;
}
