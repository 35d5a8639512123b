import { countDeadLetters, knownQueues, listDlqItems, type Catalog, type DlqItem, type QueueSet } from '@tickwork/runtime';
import type { Redis } from 'ioredis';

export interface DeadLetterSource {
  catalog: Catalog;
  queues: QueueSet;
  redis: Redis;
}

/** One line of the DLQ table (and of `GET /api/dead-letters`). */
export interface DeadLetterRow {
  queue: string;
  dlqJobId: string;
  job: string;
  originalJobId: string;
  reason: string;
  attempts: number;
  lastFailedAt: string;
  nominalTime: string | null;
  /** False for a job something else put in the DLQ: shown and purgeable, not re-drivable. */
  tickwork: boolean;
}

export interface DeadLetterOverview {
  counts: { queue: string; count: number }[];
  entries: DeadLetterRow[];
}

/** Origin queues: the catalog's and any queue served before (a DLQ outlives the job that filled it). */
export async function originQueues(src: DeadLetterSource): Promise<string[]> {
  return [...new Set([...src.catalog.queues, ...(await knownQueues(src.redis, src.queues.prefix))])].sort();
}

export async function loadDeadLetters(src: DeadLetterSource): Promise<DeadLetterOverview> {
  const counts: DeadLetterOverview['counts'] = [];
  const entries: DeadLetterRow[] = [];
  for (const queue of await originQueues(src)) {
    counts.push({ queue, count: await countDeadLetters(src.queues, queue) });
    entries.push(...(await listDlqItems(src.queues, queue)).map((d) => toRow(queue, d)));
  }
  return { counts, entries };
}

function toRow(queue: string, d: DlqItem): DeadLetterRow {
  const { dlqJobId, entry } = d;
  if (!entry) {
    const f = d.foreign;
    return { queue, dlqJobId, job: f.name, originalJobId: '', reason: f.problem, attempts: 0, lastFailedAt: f.addedAt, nominalTime: null, tickwork: false };
  }
  return {
    queue,
    dlqJobId,
    job: entry.jobName,
    originalJobId: entry.originalJobId,
    reason: entry.failureReason,
    attempts: entry.attemptsMade,
    lastFailedAt: entry.lastFailedAt,
    nominalTime: entry.nominalTime,
    tickwork: true,
  };
}
