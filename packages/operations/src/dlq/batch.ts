import type { Catalog } from '@tickwork/core';
import type { QueueSet } from '@tickwork/core';
import { countDeadLetters, purgeDeadLetters, redriveDeadLetters } from './admin.js';
import type { DlqItem } from './entry.js';
import { dlqItemJobName } from './item.js';
import { readOldestDlqItems } from './page.js';

/** Entries one batch of a re-drive-all or purge-all handles. */
export const DLQ_BATCH_SIZE = 500;
/** Why an entry was left in place by a dry run. */
export const DRY_RUN = 'dry run';
/** Skipped entries an outcome names one by one; beyond that only the count. */
const SKIPPED_SHOWN = 100;

export interface BulkProgress {
  queue: string;
  /** Entries re-driven (or purged) so far by this run. */
  done: number;
  /** Entries left in place so far (foreign jobs a re-drive refuses, everything under dryRun). */
  skipped: number;
  /** Entries the DLQ held when the run started: the most it examines (later arrivals wait for the next run). */
  total: number;
}

export interface BulkOutcome extends BulkProgress {
  /** The first skipped entries and why. */
  skippedItems: { dlqJobId: string; jobName: string; reason: string }[];
  /** Every entry there at the start was examined (false when maxBatches stopped the run: run it again). */
  finished: boolean;
  /** Entries in the DLQ when the run ended. */
  remaining: number;
}

interface BulkOptions {
  queues: QueueSet;
  queue: string;
  dryRun?: boolean;
  batchSize?: number;
  /** Stop after this many batches (the dashboard does one per request); re-running continues. */
  maxBatches?: number;
  onBatch?: (p: BulkProgress) => void;
}

/**
 * Works through one queue's DLQ oldest first, a batch at a time, holding one batch in memory. `handle`
 * returns the items it left in place; the next batch starts after them (entries handled are gone from the
 * DLQ), so an interrupted run, run again, continues where it stopped and handles nothing twice.
 */
async function inBatches(opts: BulkOptions, handle: (items: DlqItem[]) => Promise<{ item: DlqItem; reason: string }[]>): Promise<BulkOutcome> {
  const batchSize = opts.batchSize ?? DLQ_BATCH_SIZE;
  const total = await countDeadLetters(opts.queues, opts.queue);
  const progress: BulkProgress = { queue: opts.queue, done: 0, skipped: 0, total };
  const skippedItems: BulkOutcome['skippedItems'] = [];
  let examined = 0;
  let batches = 0;
  let finished = total === 0;
  while (!finished && (opts.maxBatches === undefined || batches < opts.maxBatches)) {
    const { items, vanished } = await readOldestDlqItems(opts.queues, opts.queue, progress.skipped, Math.min(batchSize, total - examined));
    const left = await handle(items);
    // An id whose job hash is gone stays in the list; it is stepped over like a skipped entry.
    progress.skipped += left.length + vanished;
    progress.done += items.length - left.length;
    for (const { item, reason } of left.slice(0, Math.max(0, SKIPPED_SHOWN - skippedItems.length))) {
      skippedItems.push({ dlqJobId: item.dlqJobId, jobName: dlqItemJobName(item), reason });
    }
    examined += items.length + vanished;
    batches += 1;
    finished = examined >= total || items.length + vanished === 0;
    opts.onBatch?.({ ...progress });
  }
  return { ...progress, skippedItems, finished, remaining: await countDeadLetters(opts.queues, opts.queue) };
}

/** Re-drives every entry of a queue's DLQ in batches (see redriveDeadLetters for what a re-drive does). */
export async function redriveAllDeadLetters(opts: BulkOptions & { catalog?: Catalog }): Promise<BulkOutcome> {
  return inBatches(opts, async (items) => {
    const outcomes = await redriveDeadLetters({ queues: opts.queues, queue: opts.queue, selector: { items }, catalog: opts.catalog, dryRun: opts.dryRun });
    return items.flatMap((item, i) => {
      const o = outcomes[i];
      if (o?.refused) return [{ item, reason: o.refused }];
      return opts.dryRun ? [{ item, reason: DRY_RUN }] : [];
    });
  });
}

/** Purges every entry of a queue's DLQ in batches. */
export async function purgeAllDeadLetters(opts: BulkOptions): Promise<BulkOutcome> {
  return inBatches(opts, async (items) => {
    if (opts.dryRun) return items.map((item) => ({ item, reason: DRY_RUN }));
    await purgeDeadLetters({ queues: opts.queues, queue: opts.queue, selector: { items } });
    return [];
  });
}

