import { DeadLetterNotFoundError, getDlqItem, purgeDeadLetters, redriveDeadLetters, type DeadLetterSelector, type Logger } from '@tickwork/runtime';
import express, { Router, type Request, type Response } from 'express';
import type { Csrf } from '../csrf.js';
import { loadDeadLetters, originQueues, type DeadLetterSource } from '../data/dead-letters.js';
import { html } from '../html.js';
import { layout, type Flash } from '../pages/layout.js';
import { renderDeadLetterDetail, renderDeadLetters } from '../pages/dead-letters.js';
import { sendPage } from './respond.js';

/**
 * The flash message after an action travels in the query string as a code and a count, never as text,
 * so a crafted link cannot make the dashboard display a message of the sender's choosing.
 */
function flashOf(req: Request): Flash | undefined {
  const n = Number(req.query.n);
  const count = Number.isInteger(n) && n >= 0 ? n : 0;
  const entries = `${count} ${count === 1 ? 'entry' : 'entries'}`;
  switch (req.query.flash) {
    case 'redriven':
      return { kind: 'ok', text: `Re-drove ${entries}: back on ${count === 1 ? 'its queue' : 'their queue'}.` };
    case 'purged':
      return { kind: 'ok', text: `Purged ${entries}.` };
    case 'not-found':
      return { kind: 'error', text: 'That entry is no longer in the dead-letter queue (already re-driven or purged?).' };
    default:
      return undefined;
  }
}

function back(res: Response, flash: string, n?: number): void {
  // 303: the browser follows with a GET, so reloading the page does not resubmit the action.
  res.redirect(303, `/dead-letters?flash=${flash}${n === undefined ? '' : `&n=${n}`}`);
}

/**
 * `GET /dead-letters`, `GET /dead-letters/:queue/:id`, `GET /api/dead-letters`, and the POST actions
 * (re-drive one, re-drive all of a queue, purge one), each behind the CSRF check.
 */
export function deadLettersRouter(src: DeadLetterSource & { log: Logger }, csrf: Csrf): Router {
  const router = Router();
  const form = express.urlencoded({ extended: false, limit: '4kb' });

  /** Only queues tickwork knows: a URL must not make the QueueSet open a Queue for any name it likes. */
  async function knownQueue(req: Request, res: Response): Promise<string | undefined> {
    const queue = String(req.params.queue);
    if ((await originQueues(src)).includes(queue)) return queue;
    const body = html`<h1>No such queue</h1><p>tickwork knows no queue named <code>${queue}</code>. <a href="/dead-letters">All dead letters</a></p>`;
    sendPage(res, layout({ title: 'Not found', section: 'dead-letters', body }), 404);
    return undefined;
  }

  async function act(req: Request, res: Response, kind: 'redrive' | 'purge', selector: DeadLetterSelector): Promise<void> {
    const queue = await knownQueue(req, res);
    if (!queue) return;
    try {
      if (kind === 'redrive') {
        const done = await redriveDeadLetters({ queues: src.queues, queue, selector, catalog: src.catalog });
        src.log.info({ queue, redriven: done.map((d) => ({ dlqJobId: d.dlqJobId, newJobId: d.newJobId })) }, 'dashboard: dead letters re-driven');
        back(res, 'redriven', done.filter((d) => d.redriven).length);
      } else {
        const done = await purgeDeadLetters({ queues: src.queues, queue, selector });
        src.log.info({ queue, purged: done.map((d) => d.dlqJobId) }, 'dashboard: dead letters purged');
        back(res, 'purged', done.filter((d) => d.purged).length);
      }
    } catch (err) {
      if (err instanceof DeadLetterNotFoundError) return back(res, 'not-found');
      throw err;
    }
  }

  router.get('/dead-letters', async (req, res) => {
    sendPage(res, renderDeadLetters(await loadDeadLetters(src), csrf.token, flashOf(req)));
  });
  router.get('/dead-letters/:queue/:id', async (req, res) => {
    const queue = await knownQueue(req, res);
    if (!queue) return;
    try {
      sendPage(res, renderDeadLetterDetail(queue, await getDlqItem(src.queues, queue, String(req.params.id)), csrf.token));
    } catch (err) {
      if (!(err instanceof DeadLetterNotFoundError)) throw err;
      const body = html`<h1>No such dead letter</h1><p>${err.message}. <a href="/dead-letters">All dead letters</a></p>`;
      sendPage(res, layout({ title: 'Not found', section: 'dead-letters', body }), 404);
    }
  });
  router.get('/api/dead-letters', async (_req, res) => {
    res.json(await loadDeadLetters(src));
  });

  router.post('/dead-letters/:queue/redrive-all', form, csrf.protect, (req, res) => act(req, res, 'redrive', { all: true }));
  router.post('/dead-letters/:queue/:id/redrive', form, csrf.protect, (req, res) => act(req, res, 'redrive', { ids: [String(req.params.id)] }));
  router.post('/dead-letters/:queue/:id/purge', form, csrf.protect, (req, res) => act(req, res, 'purge', { ids: [String(req.params.id)] }));
  return router;
}
