import { isTimelineRange, readMemoryTimeline, readQueueTimeline, type TimelineRange } from '@tickwork/operations';
import type { Catalog, QueueSet, RedisClient } from '@tickwork/core';
import { Router, type Request, type Response } from 'express';
import { originQueues } from '../data/dead-letters.js';
import { html } from '../html.js';
import { layout } from '../pages/layout.js';
import { renderOverview, renderQueue } from '../pages/overview.js';
import { sendPage } from './respond.js';

/**
 * The range a chart page asks for (`?range=1h|24h|30d`), `fallback` when absent; undefined once a 400 is
 * sent for anything else.
 */
export function chartRange(req: Request, res: Response, fallback: TimelineRange, json = false): TimelineRange | undefined {
  const asked = req.query.range;
  if (asked === undefined || asked === '') return fallback;
  if (isTimelineRange(asked)) return asked;
  const message = 'range must be one of 1h, 24h, 30d';
  if (json) res.status(400).json({ error: message });
  else sendPage(res, layout({ title: 'Bad request', section: 'overview', body: html`<h1>Bad request</h1><p class="err">${message}</p><p><a href="/overview">Overview</a></p>` }), 400);
  return undefined;
}

/**
 * `GET /overview` (Redis memory, dead-letter inflow and every queue's throughput), `GET /queue/:name` (one
 * queue's throughput, wait and run time) and their JSON twins `GET /api/overview`, `GET /api/queue/:name`.
 * Reads only: a few GETRANGEs per queue (the timelines are fixed-size strings), whatever the traffic or the
 * number of runtime schedules.
 */
export function overviewRouter(src: { catalog: Catalog; queues: QueueSet; redis: RedisClient }): Router {
  const router = Router();
  const prefix = src.queues.prefix;

  const overview = async (range: TimelineRange) => {
    const now = Date.now();
    const names = await originQueues(src);
    const [memory, queues] = await Promise.all([
      readMemoryTimeline(src.redis, prefix, range, { now }),
      Promise.all(names.map((q) => readQueueTimeline(src.redis, prefix, q, range, { now }))),
    ]);
    return { range, memory, queues };
  };
  /** The queue named by the path, if the dashboard knows it (the catalog's, or one served before). */
  const queueOf = async (req: Request): Promise<string | undefined> => {
    const name = String(req.params.name);
    return (await originQueues(src)).includes(name) ? name : undefined;
  };

  router.get('/overview', async (req, res) => {
    const range = chartRange(req, res, '1h');
    if (range) sendPage(res, renderOverview(await overview(range)));
  });
  router.get('/api/overview', async (req, res) => {
    const range = chartRange(req, res, '1h', true);
    if (range) res.json(await overview(range));
  });
  router.get('/queue/:name', async (req, res) => {
    const range = chartRange(req, res, '1h');
    if (!range) return;
    const queue = await queueOf(req);
    if (!queue) {
      const body = html`<h1>No such queue</h1><p>There is no queue <code>${String(req.params.name)}</code> in the catalog or seen before. <a href="/overview">Overview</a></p>`;
      return sendPage(res, layout({ title: 'Not found', section: 'overview', body }), 404);
    }
    sendPage(res, renderQueue(await readQueueTimeline(src.redis, prefix, queue, range, { histograms: true })));
  });
  router.get('/api/queue/:name', async (req, res) => {
    const range = chartRange(req, res, '1h', true);
    if (!range) return;
    const queue = await queueOf(req);
    if (!queue) return void res.status(404).json({ error: `no queue ${JSON.stringify(String(req.params.name))}` });
    res.json(await readQueueTimeline(src.redis, prefix, queue, range, { histograms: true }));
  });
  return router;
}
