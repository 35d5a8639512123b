import { deadLetterEntry, type DlqItem } from './entry.js';

/**
 * Reads what a DLQ job holds; anything that is not a well-formed entry comes back as foreign, never as an
 * error (a DLQ is a plain BullMQ queue anything can add to).
 */
function itemOf(where: { dlqQueue: string; dlqJobId: string }, job: { name: unknown; data: { value: unknown } | { unreadable: string }; timestamp: number }): DlqItem {
  const addedAt = new Date(Number.isFinite(job.timestamp) ? job.timestamp : 0).toISOString();
  const name = typeof job.name === 'string' ? job.name : '';
  if ('unreadable' in job.data) {
    return { ...where, entry: null, foreign: { name, data: null, raw: job.data.unreadable, addedAt, problem: 'not a tickwork dead letter (its data is not JSON)' } };
  }
  const parsed = deadLetterEntry.safeParse(job.data.value);
  if (parsed.success) return { ...where, entry: parsed.data };
  const problem = parsed.error.issues
    .slice(0, 3)
    .map((i) => (i.path.length > 0 ? `${i.path.join('.')}: ${i.message}` : i.message))
    .join('; ');
  return { ...where, entry: null, foreign: { name, data: job.data.value, raw: null, addedAt, problem: `not a tickwork dead letter (${problem})` } };
}

/** A job hash's fields as a page reads them (not the whole job). */
export interface DlqJobHash {
  name: string | null;
  data: string | null;
  timestamp: string | null;
}

export type ParsedDlqData = { value: unknown } | { unreadable: string };

export function parseDlqData(raw: string | null): ParsedDlqData {
  try {
    // An empty field reads as {}, as BullMQ's Job.fromJSON reads it.
    return { value: JSON.parse(raw || '{}') as unknown };
  } catch {
    return { unreadable: raw ?? '' };
  }
}

/** From the fields of a job's hash as stored (what a page reads, without BullMQ decoding the whole job). */
export function dlqItemFromHash(dlqQueue: string, dlqJobId: string, hash: DlqJobHash, data: ParsedDlqData = parseDlqData(hash.data)): DlqItem {
  return itemOf({ dlqQueue, dlqJobId }, { name: hash.name, data, timestamp: Number(hash.timestamp) });
}

/** When an item reached the DLQ: tickwork's own time, else the BullMQ job's. */
export function dlqItemArrivedAt(d: DlqItem): string {
  return d.entry ? d.entry.deadLetteredAt : d.foreign.addedAt;
}

/** The job name to show for an item; a foreign job may have none. */
export function dlqItemJobName(d: DlqItem): string {
  return d.entry ? d.entry.jobName : d.foreign.name;
}

/** One line of a DLQ listing (dashboard table, `GET /api/dead-letters`, `tickwork dlq list`). */
export interface DlqSummary {
  queue: string;
  dlqJobId: string;
  job: string;
  originalJobId: string;
  reason: string;
  attempts: number;
  lastFailedAt: string;
  nominalTime: string | null;
  redriveCount: number;
  /** False for a job something else put in the DLQ: shown and purgeable, not re-drivable. */
  tickwork: boolean;
}

export function dlqSummary(queue: string, d: DlqItem): DlqSummary {
  const { dlqJobId, entry } = d;
  if (!entry) {
    const f = d.foreign;
    return { queue, dlqJobId, job: f.name, originalJobId: '', reason: f.problem, attempts: 0, lastFailedAt: f.addedAt, nominalTime: null, redriveCount: 0, tickwork: false };
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
    redriveCount: entry.redriveCount,
    tickwork: true,
  };
}
