import { DeadLetterNotFoundError, DLQ_BATCH_SIZE, DlqQueryError, getDlqItem, parseDlqListQuery, purgeAllDeadLetters, purgeDeadLetters, redriveAllDeadLetters, redriveDeadLetters, type DlqListQuery } from '@tickwork/operations';
import type { Logger } from '@tickwork/core';
import express, { Router, type Request, type Response } from 'express';
import { noteAuditDetail } from '../audit.js';
import { signedIn } from '../basic-auth.js';
import type { Csrf } from '../csrf.js';
import { loadDeadLetterPage, originQueues, type DeadLetterSource } from '../data/dead-letters.js';
import { html } from '../html.js';
import { layout, type Flash } from '../pages/layout.js';
import { renderDeadLetterDetail, renderDeadLetters } from '../pages/dead-letters.js';
import { bulkForm, selectedAction } from './dead-letters-bulk.js';
import { sendPage } from './respond.js';

/**
 * The flash message after an action travels in the query string as a code and a count, never as text,
 * so a crafted link cannot make the dashboard display a message of the sender's choosing.
 */
function flashOf(req: Request): Flash | undefined {
  const n = Number(req.query.n);
  const count = Number.isInteger(n) && n >= 0 ? n : 0;
  const entries = `${count} ${count === 1 ? 'entry' : 'entries'}`;
  const l = Number(req.query.left);
  // After one batch of an "all" action: how many are left, and that pressing again continues.
  const left = Number.isInteger(l) && l > 0 ? ` ${l} ${l === 1 ? 'entry remains' : 'entries remain'} in that dead-letter queue: press the button again to continue with the next batch.` : '';
  const g = Number(req.query.gone);
  const gone = Number.isInteger(g) && g > 0 ? ` ${g} selected ${g === 1 ? 'entry was' : 'entries were'} no longer there (already re-driven or purged?) or could not be re-driven.` : '';
  switch (req.query.flash) {
    case 'redriven':
      return { kind: 'ok', text: `Re-drove ${entries}: back on ${count === 1 ? 'its queue' : 'their queue'}.${left}${gone}` };
    case 'purged':
      return { kind: 'ok', text: `Purged ${entries}.${left}${gone}` };
    case 'none-selected':
      return { kind: 'error', text: 'No entry was selected: tick the entries first. Nothing was changed.' };
    case 'too-many':
      return { kind: 'error', text: 'At most 500 entries at once (one page). Nothing was changed.' };
    case 'not-found':
      return { kind: 'error', text: 'That entry is no longer in the dead-letter queue (already re-driven or purged?).' };
    default:
      return undefined;
  }
}

function back(res: Response, flash: string, n?: number, left?: number): void {
  // A redirect's status does not say how it went: the flash does.
  noteAuditDetail(res, { outcome: flash });
  // 303: the browser follows with a GET, so reloading the page does not resubmit the action.
  res.redirect(303, `/dead-letters?flash=${flash}${n === undefined ? '' : `&n=${n}`}${left ? `&left=${left}` : ''}`);
}

/** The listing's parameters from the query string (repeated or nested parameters are not strings: a 400). */
function listQuery(req: Request): DlqListQuery {
  const raw: Record<string, string | undefined> = {};
  for (const k of ['queue', 'name', 'reason', 'since', 'until', 'limit', 'cursor']) {
    const v = req.query[k];
    if (v !== undefined && typeof v !== 'string') throw new DlqQueryError(`${k} must be given once`);
    raw[k] = v;
  }
  return parseDlqListQuery(raw);
}

/**
 * `GET /dead-letters`, `GET /dead-letters/:queue/:id`, `GET /api/dead-letters`, and the POST actions
 * (re-drive or purge one; re-drive or purge all of a queue, a batch per request), each behind the CSRF check.
 */
export function deadLettersRouter(src: DeadLetterSource & { log: Logger }, csrf: Csrf): Router {
  const router = Router();
  const form = express.urlencoded({ extended: false, limit: '4kb' });
  /** Viewers get no token, so their pages show no action buttons. */
  const tokenFor = (res: Response): string | undefined => (signedIn(res).role === 'admin' ? csrf.token : undefined);

  /** Only queues tickwork knows: a URL must not make the QueueSet open a Queue for any name it likes. */
  async function knownQueue(req: Request, res: Response): Promise<string | undefined> {
    const queue = String(req.params.queue);
    if ((await originQueues(src)).includes(queue)) return queue;
    const body = html`<h1>No such queue</h1><p>tickwork knows no queue named <code>${queue}</code>. <a href="/dead-letters">All dead letters</a></p>`;
    sendPage(res, layout({ title: 'Not found', section: 'dead-letters', body }), 404);
    return undefined;
  }

  async function act(req: Request, res: Response, kind: 'redrive' | 'purge', ids: string[]): Promise<void> {
    const queue = await knownQueue(req, res);
    if (!queue) return;
    const selector = { ids };
    try {
      if (kind === 'redrive') {
        const done = await redriveDeadLetters({ queues: src.queues, queue, selector, catalog: src.catalog });
        noteAuditDetail(res, { newJobId: done.filter((d) => d.redriven).map((d) => d.newJobId).join(', ') });
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

  /**
   * One batch of a re-drive-all or purge-all per request, so a request stays short however full the DLQ;
   * the flash says how many remain and pressing again continues (entries done are gone from the DLQ).
   */
  async function actAll(req: Request, res: Response, kind: 'redrive' | 'purge'): Promise<void> {
    const queue = await knownQueue(req, res);
    if (!queue) return;
    const opts = { queues: src.queues, queue, maxBatches: 1 };
    const out = kind === 'redrive' ? await redriveAllDeadLetters({ ...opts, catalog: src.catalog }) : await purgeAllDeadLetters(opts);
    noteAuditDetail(res, { done: out.done, skipped: out.skipped || undefined, remaining: out.remaining });
    src.log.info({ queue, done: out.done, skipped: out.skipped, remaining: out.remaining, batch: DLQ_BATCH_SIZE }, `dashboard: dead letters ${kind === 'redrive' ? 're-driven' : 'purged'} (one batch)`);
    back(res, kind === 'redrive' ? 'redriven' : 'purged', out.done, out.remaining);
  }

  router.get('/dead-letters', async (req, res) => {
    try {
      const query = listQuery(req);
      sendPage(res, renderDeadLetters(await loadDeadLetterPage(src, query), query, tokenFor(res), flashOf(req)));
    } catch (err) {
      if (!(err instanceof DlqQueryError)) throw err;
      const body = html`<h1>Bad listing</h1><p class="err">${err.message}</p><p><a href="/dead-letters">All dead letters</a></p>`;
      sendPage(res, layout({ title: 'Bad request', section: 'dead-letters', body }), 400);
    }
  });
  router.get('/dead-letters/:queue/:id', async (req, res) => {
    const queue = await knownQueue(req, res);
    if (!queue) return;
    try {
      sendPage(res, renderDeadLetterDetail(queue, await getDlqItem(src.queues, queue, String(req.params.id)), tokenFor(res)));
    } catch (err) {
      if (!(err instanceof DeadLetterNotFoundError)) throw err;
      const body = html`<h1>No such dead letter</h1><p>${err.message}. <a href="/dead-letters">All dead letters</a></p>`;
      sendPage(res, layout({ title: 'Not found', section: 'dead-letters', body }), 404);
    }
  });
  /** One entry as JSON, whatever it holds (data that is not JSON comes as `foreign.raw`, the text as stored). */
  router.get('/api/dead-letters/:queue/:id', async (req, res) => {
    const queue = String(req.params.queue);
    if (!(await originQueues(src)).includes(queue)) return void res.status(404).json({ error: `no queue ${JSON.stringify(queue)}` });
    try {
      res.json(await getDlqItem(src.queues, queue, String(req.params.id)));
    } catch (err) {
      if (!(err instanceof DeadLetterNotFoundError)) throw err;
      res.status(404).json({ error: err.message });
    }
  });
  router.get('/api/dead-letters', async (req, res) => {
    try {
      res.json(await loadDeadLetterPage(src, listQuery(req)));
    } catch (err) {
      if (!(err instanceof DlqQueryError)) throw err;
      res.status(400).json({ error: err.message });
    }
  });

  router.post('/dead-letters/selected', bulkForm, csrf.protect, selectedAction(src));
  router.post('/dead-letters/:queue/redrive-all', form, csrf.protect, (req, res) => actAll(req, res, 'redrive'));
  router.post('/dead-letters/:queue/purge-all', form, csrf.protect, (req, res) => actAll(req, res, 'purge'));
  router.post('/dead-letters/:queue/:id/redrive', form, csrf.protect, (req, res) => act(req, res, 'redrive', [String(req.params.id)]));
  router.post('/dead-letters/:queue/:id/purge', form, csrf.protect, (req, res) => act(req, res, 'purge', [String(req.params.id)]));
  return router;
}
