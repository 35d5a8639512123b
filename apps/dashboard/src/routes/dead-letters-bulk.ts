import { DeadLetterNotFoundError, purgeDeadLetters, redriveDeadLetters } from '@tickwork/operations';
import type { Logger } from '@tickwork/core';
import express, { type Request, type RequestHandler, type Response } from 'express';
import { noteAuditDetail } from '../audit.js';
import { originQueues, type DeadLetterSource } from '../data/dead-letters.js';

/** At most one listing page of entries (its `limit` is at most 500) per request. */
export const MAX_SELECTED = 500;

/** The inverse of the page's `selectedValue`: `<queue>/<dlq job id>`, each URI-encoded. */
function parseSelected(value: string): { queue: string; id: string } | undefined {
  const slash = value.indexOf('/');
  if (slash <= 0) return undefined;
  try {
    return { queue: decodeURIComponent(value.slice(0, slash)), id: decodeURIComponent(value.slice(slash + 1)) };
  } catch {
    return undefined;
  }
}

/** Where to go back to: the listing the form was on (its filter kept), never another path or site. */
function listingBack(value: unknown): string {
  if (typeof value !== 'string' || !/^\/dead-letters(\?[^#\s]*)?$/.test(value)) return '/dead-letters';
  const url = new URL(value, 'http://x');
  for (const k of ['flash', 'n', 'left', 'gone', 'cursor']) url.searchParams.delete(k);
  return `${url.pathname}${url.search}`;
}

/** The body of a page of selected ids: up to 500 ids of up to ~600 bytes each. */
export const bulkForm: RequestHandler = express.urlencoded({ extended: false, limit: '512kb', parameterLimit: MAX_SELECTED + 10 });

/**
 * `POST /dead-letters/selected`: re-drive or purge the entries ticked on the listing (or every entry
 * shown, which the page sends the same way), one by one, so an entry already gone is counted and the rest
 * still handled. Back to the same listing (its filter kept, from its first page), whose flash says how many
 * were handled and how many were no longer there; the entries done have left the DLQ, so a filtered
 * listing now shows the next matches, and pressing again continues through a filtered set.
 */
export function selectedAction(src: DeadLetterSource & { log: Logger }): RequestHandler {
  return async (req: Request, res: Response) => {
    const body = (req.body ?? {}) as Record<string, unknown>;
    const back = listingBack(body.back);
    const join = back.includes('?') ? '&' : '?';
    const go = (query: string) => {
      noteAuditDetail(res, { outcome: query });
      res.redirect(303, `${back}${join}${query}`);
    };
    const kind = body.action === 'redrive' || body.action === 'purge' ? body.action : undefined;
    const raw = typeof body.ids === 'string' ? [body.ids] : Array.isArray(body.ids) ? body.ids.filter((v): v is string => typeof v === 'string') : [];
    if (kind === undefined || raw.length === 0) return go('flash=none-selected');
    if (raw.length > MAX_SELECTED) return go('flash=too-many');
    const known = new Set(await originQueues(src));
    let done = 0;
    let gone = 0;
    const handled: string[] = [];
    for (const value of raw) {
      const sel = parseSelected(value);
      if (!sel || !known.has(sel.queue)) {
        gone++;
        continue;
      }
      try {
        const ok =
          kind === 'redrive'
            ? (await redriveDeadLetters({ queues: src.queues, queue: sel.queue, selector: { ids: [sel.id] }, catalog: src.catalog })).some((o) => o.redriven)
            : (await purgeDeadLetters({ queues: src.queues, queue: sel.queue, selector: { ids: [sel.id] } })).some((o) => o.purged);
        if (ok) {
          done++;
          if (handled.length < 50) handled.push(`${sel.queue}/${sel.id}`);
        } else gone++;
      } catch (err) {
        if (!(err instanceof DeadLetterNotFoundError)) throw err;
        gone++;
      }
    }
    noteAuditDetail(res, { selected: raw.length, done, gone: gone || undefined, first: handled.join(', ').slice(0, 2000) });
    src.log.info({ selected: raw.length, done, gone, entries: handled }, `dashboard: selected dead letters ${kind === 'redrive' ? 're-driven' : 'purged'}`);
    go(`flash=${kind === 'redrive' ? 'redriven' : 'purged'}&n=${done}${gone ? `&gone=${gone}` : ''}`);
  };
}
