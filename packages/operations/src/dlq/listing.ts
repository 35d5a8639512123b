import type { QueueSet } from '@tickwork/core';
import { countDeadLetters } from './admin.js';
import { dlqSummary, type DlqSummary } from './item.js';
import { DLQ_SCAN_WINDOW, DlqQueryError, readDlqPage } from './page.js';
import type { DlqListQuery } from './query.js';

/** What the dashboard's DLQ page, `GET /api/dead-letters` and `tickwork dlq list` show. */
export interface DlqListing {
  /** Entries per DLQ, from Redis's list and set sizes (no entry is read to count). */
  counts: { queue: string; count: number }[];
  /** This page's entries: queue by queue (by name), oldest first within each. */
  entries: DlqSummary[];
  /** The `cursor` of the next page; null on the last. */
  next: string | null;
  /** Entries examined for this page; a filter examines at most `scanWindow` per page. */
  scanned: number;
  scanWindow: number;
  /** The filter stopped at the scan window before the page filled: more matches may follow `next`. */
  windowFull: boolean;
}

/**
 * Counts for every queue in `queues` (origin queue names) and one page of entries. A queue outside them
 * or a cursor that makes no sense is a DlqQueryError.
 */
export async function dlqListing(queueSet: QueueSet, queues: readonly string[], query: DlqListQuery): Promise<DlqListing> {
  if (query.queue !== undefined && !queues.includes(query.queue)) throw new DlqQueryError(`unknown queue "${query.queue}"; known queues: ${queues.join(', ') || '(none)'}`);
  const counts = await Promise.all(queues.map(async (queue) => ({ queue, count: await countDeadLetters(queueSet, queue) })));
  const page = await readDlqPage({
    queues: queueSet,
    queueNames: query.queue === undefined ? queues : [query.queue],
    limit: query.limit,
    filter: query.filter,
    ...(query.cursor !== undefined && { cursor: query.cursor }),
  });
  return {
    counts,
    entries: page.items.map((p) => dlqSummary(p.queue, p.item)),
    next: page.next,
    scanned: page.scanned,
    scanWindow: DLQ_SCAN_WINDOW,
    windowFull: page.windowFull,
  };
}
