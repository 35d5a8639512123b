import { CancelInputError, JobNotCancellableError, JobNotFoundError, pendingCancels, requestCancel } from '@tickwork/operations';
import type { Catalog, QueueSet, RedisClient } from '@tickwork/core';
import express, { Router, type Request, type Response } from 'express';
import { signedIn } from '../basic-auth.js';
import type { Csrf } from '../csrf.js';
import { originQueues } from '../data/dead-letters.js';
import { html } from '../html.js';
import { layout, type Flash } from '../pages/layout.js';
import { renderRunning, type RunningJob } from '../pages/jobs.js';
import { sendPage } from './respond.js';

const PAGE_SIZE = 50;

/** Flash messages travel as codes, never as text (see dead-letters.ts). */
function flashOf(req: Request): Flash | undefined {
  switch (req.query.flash) {
    case 'cancel-requested':
      return { kind: 'ok', text: 'Cancel requested. A running job is aborted by its worker now; a waiting or delayed one ends as cancelled, without running, when a worker takes it.' };
    case 'not-found':
      return { kind: 'error', text: 'No such job in that queue (never added, or already removed by its retention). Nothing was cancelled.' };
    case 'finished':
      return { kind: 'error', text: 'That job has already completed or failed: there is nothing to cancel.' };
    case 'bad-input':
      return { kind: 'error', text: 'Give a job id, and a reason of at most 500 characters. Nothing was cancelled.' };
    default:
      return undefined;
  }
}

/**
 * `GET /jobs` (the running jobs of one queue, a page at a time: BullMQ's active list is read by range,
 * never whole) and `POST /jobs/:queue/cancel` (admins; behind the Origin check and the form token).
 */
export function jobsRouter(src: { catalog: Catalog; queues: QueueSet; redis: RedisClient }, csrf: Csrf): Router {
  const router = Router();
  const form = express.urlencoded({ extended: false, limit: '4kb' });

  router.get('/jobs', async (req, res) => {
    const queues = await originQueues(src);
    const asked = typeof req.query.queue === 'string' ? req.query.queue : undefined;
    const queue = asked ?? queues[0] ?? '';
    if (!queues.includes(queue)) {
      const body = html`<h1>No such queue</h1><p>tickwork knows no queue named <code>${queue}</code>. <a href="/jobs">Running jobs</a></p>`;
      return sendPage(res, layout({ title: 'Not found', section: 'jobs', body }), 404);
    }
    const n = Number(req.query.page ?? 1);
    const page = Number.isSafeInteger(n) && n >= 1 ? n : 1;
    const q = src.queues.get(queue);
    const start = (page - 1) * PAGE_SIZE;
    const [active, list] = await Promise.all([q.getActiveCount(), q.getJobs(['active'], start, start + PAGE_SIZE - 1, true)]);
    const cancels = await pendingCancels(src.redis, src.queues.prefix, queue, list.map((j) => String(j.id)));
    const jobs: RunningJob[] = list.map((j) => ({
      id: String(j.id),
      name: j.name,
      attempt: j.attemptsMade + 1,
      startedAt: j.processedOn ? new Date(j.processedOn).toISOString() : null,
      progress: j.progress,
      cancel: cancels.get(String(j.id)),
    }));
    const token = signedIn(res).role === 'admin' ? csrf.token : undefined;
    sendPage(res, renderRunning({ queue, queues, active, page, pageSize: PAGE_SIZE, jobs }, token, flashOf(req)));
  });

  router.post('/jobs/:queue/cancel', form, csrf.protect, async (req: Request, res: Response) => {
    const queue = String(req.params.queue);
    const back = (flash: string) => res.redirect(303, `/jobs?queue=${encodeURIComponent(queue)}&flash=${flash}`);
    if (!(await originQueues(src)).includes(queue)) return back('not-found');
    const body = req.body as Record<string, unknown>;
    const jobId = typeof body.jobId === 'string' ? body.jobId.trim() : '';
    const reason = typeof body.reason === 'string' ? body.reason : undefined;
    try {
      await requestCancel({ queues: src.queues, queue, jobId, by: signedIn(res).name, reason });
      back('cancel-requested');
    } catch (err) {
      if (err instanceof JobNotFoundError) return back('not-found');
      if (err instanceof JobNotCancellableError) return back('finished');
      if (err instanceof CancelInputError) return back('bad-input');
      throw err;
    }
  });
  return router;
}
