import { CancelInputError, JobNotCancellableError, JobNotFoundError, pendingCancels, requestCancel } from '@tickwork/operations';
import type { Catalog, QueueSet, RedisClient } from '@tickwork/core';
import express, { Router, type Request, type Response } from 'express';
import { noteAuditDetail } from '../audit.js';
import { signedIn } from '../basic-auth.js';
import type { Csrf } from '../csrf.js';
import { originQueues } from '../data/dead-letters.js';
import { html } from '../html.js';
import { layout, type Flash } from '../pages/layout.js';
import { renderRunning, type RunningJob } from '../pages/jobs.js';
import { sendPage } from './respond.js';

const PAGE_SIZE = 50;
/**
 * The all-queues view merges each queue's oldest running jobs, so page N reads N pages from every queue:
 * bounded here (1,000 jobs); past it, a queue's own view pages by range as far as it goes.
 */
const MAX_ALL_PAGE = 20;
/** Far beyond any real page (50 x 1e6 running jobs), and small enough for Redis's range arithmetic. */
const MAX_PAGE = 1_000_000;

function notFound(res: Response, queue: string): void {
  const body = html`<h1>No such queue</h1><p>tickwork knows no queue named <code>${queue}</code>. <a href="/jobs">Running jobs</a></p>`;
  sendPage(res, layout({ title: 'Not found', section: 'jobs', body }), 404);
}

function badRequest(res: Response, message: string): void {
  const body = html`<h1>Bad request</h1><p class="err">${message}</p><p><a href="/jobs">Running jobs</a></p>`;
  sendPage(res, layout({ title: 'Bad request', section: 'jobs', body }), 400);
}

/** `queue` and `page` from the query string: each at most once, the page a whole number from 1; undefined after answering 400. */
function listingQuery(req: Request, res: Response): { asked: string | undefined; page: number } | undefined {
  const { queue, page } = req.query;
  if ((queue !== undefined && typeof queue !== 'string') || (page !== undefined && typeof page !== 'string')) return void badRequest(res, 'queue and page must each be given once');
  const n = page === undefined || page === '' ? 1 : /^\d{1,7}$/.test(page) ? Number(page) : NaN;
  if (!(n >= 1 && n <= MAX_PAGE)) return void badRequest(res, `page must be a whole number from 1 to ${MAX_PAGE}, got ${JSON.stringify(page)}`);
  return { asked: queue === '' ? undefined : queue, page: n };
}

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
 * `GET /jobs` (the running jobs of every queue, oldest first, or of one queue, a page at a time: BullMQ's
 * active lists are read by range, never whole) and `POST /jobs/:queue/cancel` (admins; behind the Origin check and the form token).
 */
export function jobsRouter(src: { catalog: Catalog; queues: QueueSet; redis: RedisClient }, csrf: Csrf): Router {
  const router = Router();
  const form = express.urlencoded({ extended: false, limit: '4kb' });

  router.get('/jobs', async (req, res) => {
    const query = listingQuery(req, res);
    if (!query) return;
    const { asked, page } = query;
    const queues = await originQueues(src);
    if (asked !== undefined && !queues.includes(asked)) return notFound(res, asked);
    if (asked === undefined && page > MAX_ALL_PAGE) {
      return badRequest(res, `every queue's running jobs are shown up to page ${MAX_ALL_PAGE}; choose a queue to page further`);
    }
    const shown = asked === undefined ? queues : [asked];
    // One queue: its page by range. All queues: the first `page` pages of each, merged oldest first.
    const start = asked === undefined ? 0 : (page - 1) * PAGE_SIZE;
    const end = asked === undefined ? page * PAGE_SIZE - 1 : start + PAGE_SIZE - 1;
    const perQueue = await Promise.all(
      shown.map(async (queue) => {
        const q = src.queues.get(queue);
        const [active, list] = await Promise.all([q.getActiveCount(), q.getJobs(['active'], start, end, true)]);
        const cancels = await pendingCancels(src.redis, src.queues.prefix, queue, list.map((j) => String(j.id)));
        const jobs = list.map(
          (j): RunningJob => ({
            queue,
            id: String(j.id),
            name: j.name,
            attempt: j.attemptsMade + 1,
            startedAt: j.processedOn ? new Date(j.processedOn).toISOString() : null,
            progress: j.progress,
            cancel: cancels.get(String(j.id)),
          }),
        );
        return { active, jobs };
      }),
    );
    const active = perQueue.reduce((a, q) => a + q.active, 0);
    let jobs = perQueue.flatMap((q) => q.jobs);
    if (asked === undefined) {
      jobs = jobs.sort((a, b) => (a.startedAt ?? '').localeCompare(b.startedAt ?? '')).slice((page - 1) * PAGE_SIZE, page * PAGE_SIZE);
    }
    const token = signedIn(res).role === 'admin' ? csrf.token : undefined;
    const pages = Math.max(1, Math.ceil(active / PAGE_SIZE));
    const lastPage = asked === undefined ? Math.min(pages, MAX_ALL_PAGE) : pages;
    sendPage(res, renderRunning({ queue: asked ?? null, queues, active, page, lastPage, pageSize: PAGE_SIZE, jobs, now: Date.now() }, token, flashOf(req)));
  });

  router.post('/jobs/:queue/cancel', form, csrf.protect, async (req: Request, res: Response) => {
    const queue = String(req.params.queue);
    const back = (flash: string) => {
      // A redirect's status does not say how it went: the flash does.
      noteAuditDetail(res, { outcome: flash });
      // Back to the view the form was on: one queue's, or every queue's (the form says which).
      const from = (req.body as Record<string, unknown> | undefined)?.view === 'all' ? '' : `queue=${encodeURIComponent(queue)}&`;
      res.redirect(303, `/jobs?${from}flash=${flash}`);
    };
    const body = (req.body ?? {}) as Record<string, unknown>;
    const jobId = typeof body.jobId === 'string' ? body.jobId.trim() : '';
    const reason = typeof body.reason === 'string' ? body.reason : undefined;
    // The path names the queue; the job and the reason are in the body, which is never recorded whole.
    noteAuditDetail(res, { jobId: jobId.slice(0, 200), reason: reason?.slice(0, 500) });
    if (!(await originQueues(src)).includes(queue)) return back('not-found');
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
