import type { JobsOptions, JobType } from 'bullmq';
import type { Catalog } from '@tickwork/core';
import { TickworkError } from '@tickwork/core';
import { dlqName, jobOptions, type QueueSet } from '@tickwork/core';
import { REDRIVE_OPTION, type RedriveMeta } from '@tickwork/core';
import type { DeadLetter, DeadLetterEntry, DlqItem } from './entry.js';
import { redrivenJobId } from './ids.js';
import { dlqItemArrivedAt, dlqItemFromHash, dlqItemJobName } from './item.js';
import { readOldestDlqItems } from './page.js';
import { noteTrail } from './trail.js';

/** Nothing processes a DLQ, so its entries stay in the states of jobs not yet started. */
const DLQ_STATES: JobType[] = ['waiting', 'prioritized', 'delayed'];

/** The named DLQ entry does not exist (already re-driven or purged, or a typo). */
export class DeadLetterNotFoundError extends TickworkError {
  override name = 'DeadLetterNotFoundError';
  constructor(
    readonly queue: string,
    readonly dlqJobId: string,
  ) {
    super(`no DLQ entry "${dlqJobId}" in ${dlqName(queue)}; run \`tickwork dlq list --queue ${queue}\` to see its entries`);
  }
}

/** The DLQ job exists but is not a tickwork entry (something else added it). */
export class ForeignDlqJobError extends TickworkError {
  override name = 'ForeignDlqJobError';
  constructor(
    readonly queue: string,
    readonly dlqJobId: string,
    problem: string,
  ) {
    super(`"${dlqJobId}" in ${dlqName(queue)} is ${problem}; purge it with \`tickwork dlq purge --queue ${queue} --job ${dlqJobId}\``);
  }
}

/**
 * Which entries an operation applies to: some ids, or items already read (a batch). Every entry of a DLQ
 * goes through redriveAllDeadLetters / purgeAllDeadLetters, which work in bounded batches.
 */
export type DeadLetterSelector = { ids: readonly string[] } | { items: readonly DlqItem[] };

export async function countDeadLetters(queues: QueueSet, queue: string): Promise<number> {
  return queues.get(dlqName(queue)).getJobCountByTypes(...DLQ_STATES);
}

/**
 * Everything in one queue's DLQ, foreign jobs included, oldest first. Loads every entry: for tests and
 * checks on small queues; listings page with readDlqPage.
 */
export async function listDlqItems(queues: QueueSet, queue: string): Promise<DlqItem[]> {
  const { items } = await readOldestDlqItems(queues, queue, 0, await countDeadLetters(queues, queue));
  return items.sort((a, b) => dlqItemArrivedAt(a).localeCompare(dlqItemArrivedAt(b)) || a.dlqJobId.localeCompare(b.dlqJobId));
}

/** tickwork's entries in one queue's DLQ (foreign jobs left out), oldest dead-lettering first. */
export async function listDeadLetters(queues: QueueSet, queue: string): Promise<DeadLetter[]> {
  return (await listDlqItems(queues, queue)).filter(isDeadLetter);
}

export function isDeadLetter(d: DlqItem): d is DeadLetter {
  return d.entry !== null;
}

/**
 * One item of a DLQ, whatever it holds. Read from the job's hash as stored, not through BullMQ's Job (which
 * throws on data that is not JSON), so such an entry can still be shown, exported and purged on its own.
 */
export async function getDlqItem(queues: QueueSet, queue: string, dlqJobId: string): Promise<DlqItem> {
  const dlq = dlqName(queue);
  let fields: (string | null)[];
  try {
    fields = await queues.redis.hmget(queues.get(dlq).toKey(dlqJobId), 'name', 'data', 'timestamp');
  } catch (err) {
    // An id that names one of the queue's own keys (`wait`, `meta`...) is no entry of it.
    if ((err as Error).message.startsWith('WRONGTYPE')) throw new DeadLetterNotFoundError(queue, dlqJobId);
    throw err;
  }
  const [name = null, data = null, timestamp = null] = fields;
  if (name === null && data === null) throw new DeadLetterNotFoundError(queue, dlqJobId);
  return dlqItemFromHash(dlq, dlqJobId, { name, data, timestamp });
}

/** One tickwork entry; a foreign job with that id is an error naming what is wrong with it. */
export async function getDeadLetter(queues: QueueSet, queue: string, dlqJobId: string): Promise<DeadLetter> {
  const item = await getDlqItem(queues, queue, dlqJobId);
  if (!isDeadLetter(item)) throw new ForeignDlqJobError(queue, dlqJobId, item.foreign.problem);
  return item;
}

async function select(queues: QueueSet, queue: string, selector: DeadLetterSelector): Promise<DlqItem[]> {
  if ('items' in selector) return [...selector.items];
  const found: DlqItem[] = [];
  for (const id of selector.ids) found.push(await getDlqItem(queues, queue, id));
  return found;
}

export interface RedriveOutcome {
  dlqJobId: string;
  jobName: string;
  /** The id of the job put back on the origin queue (the one it would get, with dryRun). */
  newJobId: string;
  idempotencyKey: string;
  redriven: boolean;
  /** Set when the item is not a tickwork entry and so cannot be re-driven (purge it instead). */
  refused?: string;
}

/**
 * Puts DLQ entries back on their origin queue with fresh attempts and the same idempotency key, and
 * removes each entry only once its job is enqueued. Re-running after a crash midway is safe: the new
 * job id derives from the entry, so an entry already re-enqueued is not enqueued twice.
 *
 * With `catalog`, a job the catalog still defines gets its current retry policy (the fix may have been
 * to it); otherwise the original job's options are reused.
 */
export async function redriveDeadLetters(opts: {
  queues: QueueSet;
  queue: string;
  selector: DeadLetterSelector;
  catalog?: Catalog;
  dryRun?: boolean;
  now?: () => Date;
}): Promise<RedriveOutcome[]> {
  const { queues, queue } = opts;
  const now = opts.now ?? (() => new Date());
  const outcomes: RedriveOutcome[] = [];
  const dlq = queues.get(dlqName(queue));
  for (const item of await select(queues, queue, opts.selector)) {
    const { dlqJobId, entry } = item;
    if (!entry) {
      // One foreign job never stops the others from being re-driven.
      const refused = `${item.foreign.problem}; it cannot be re-driven, purge it`;
      outcomes.push({ dlqJobId, jobName: item.foreign.name, newJobId: '', idempotencyKey: '', redriven: false, refused });
      continue;
    }
    const redriveCount = entry.redriveCount + 1;
    const newJobId = redrivenJobId(entry.rootDlqJobId, redriveCount);
    const outcome = { dlqJobId, jobName: entry.jobName, newJobId, idempotencyKey: entry.idempotencyKey, redriven: false };
    outcomes.push(outcome);
    if (opts.dryRun) continue;
    // Another re-drive of the same entries (a second click, a second CLI) may have finished it meanwhile:
    // its job may even have completed and gone, so adding it again would run it again.
    if ((await queues.redis.exists(dlq.toKey(dlqJobId))) === 0) continue;
    const meta: RedriveMeta = {
      idempotencyKey: entry.idempotencyKey,
      ...(entry.nominalTime !== null && { nominalTime: Date.parse(entry.nominalTime) }),
      ...(entry.scheduleId !== null && { scheduleId: entry.scheduleId }),
      redriveCount,
      rootDlqJobId: entry.rootDlqJobId,
      history: [
        ...entry.history,
        {
          jobId: entry.originalJobId,
          failureReason: entry.failureReason,
          attemptsMade: entry.attemptsMade,
          firstFailedAt: entry.firstFailedAt,
          lastFailedAt: entry.lastFailedAt,
          deadLetteredAt: entry.deadLetteredAt,
          redrivenAt: now().toISOString(),
        },
      ],
    };
    const origin = queues.get(entry.originQueue);
    const def = opts.catalog?.get(entry.jobName);
    const jobOpts = { ...(def ? jobOptions(def) : reusableOptions(entry)), jobId: newJobId, [REDRIVE_OPTION]: meta };
    await origin.add(entry.jobName, entry.payload, jobOpts as JobsOptions);
    await noteTrail(queues, dlqName(queue), dlqJobId, { to: 'redrive', queue: entry.originQueue, id: newJobId, at: now().toISOString() });
    await removeStaleOrigin(queues, entry);
    await dlq.remove(dlqJobId);
    outcome.redriven = true;
  }
  return outcomes;
}

/** Removes DLQ entries for good (the failure was understood and needs no re-run). */
export async function purgeDeadLetters(opts: {
  queues: QueueSet;
  queue: string;
  selector: DeadLetterSelector;
  dryRun?: boolean;
}): Promise<{ dlqJobId: string; jobName: string; purged: boolean }[]> {
  const dlq = opts.queues.get(dlqName(opts.queue));
  const out: { dlqJobId: string; jobName: string; purged: boolean }[] = [];
  for (const item of await select(opts.queues, opts.queue, opts.selector)) {
    const purged = opts.dryRun ? false : (await dlq.remove(item.dlqJobId)) === 1;
    out.push({ dlqJobId: item.dlqJobId, jobName: dlqItemJobName(item), purged });
  }
  return out;
}

/** Options of the original job that still make sense for a fresh one (no id, delay, repeat or timestamps). */
function reusableOptions(entry: DeadLetterEntry): Record<string, unknown> {
  const keep = ['attempts', 'backoff', 'removeOnComplete', 'removeOnFail', 'priority', 'lifo', 'stackTraceLimit'];
  return Object.fromEntries(Object.entries(entry.originalOptions).filter(([k]) => keep.includes(k)));
}

/**
 * A worker that crashed between writing the DLQ entry and removing the origin job leaves the failed job
 * behind; the sweep would dead-letter it again after this re-drive. Removing it here closes that window.
 */
async function removeStaleOrigin(queues: QueueSet, entry: DeadLetterEntry): Promise<void> {
  const origin = queues.get(entry.originQueue);
  const stale = await origin.getJob(entry.originalJobId);
  if (stale && stale.timestamp === entry.originalTimestamp && (await stale.getState()) === 'failed') {
    await origin.remove(entry.originalJobId);
  }
}
