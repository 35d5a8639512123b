import { deadLetterJobId, type DeadLetterEntry } from '@tickwork/operations';
import { dlqName, type RedisClient } from '@tickwork/core';
import { fillWaiting, type WaitingJob } from './bulk-fill.js';

/** What fillDeadLetters writes per entry, so a test can say which entries a filter must find. */
export interface FilledEntry {
  dlqJobId: string;
  jobName: string;
  reason: string;
  deadLetteredAt: string;
}

export interface FillOptions {
  prefix: string;
  /** Origin queue; entries go to `<queue>.dlq`. */
  queue: string;
  count: number;
  /** Job names, used in turn (entry i gets names[i % names.length]). */
  jobNames: readonly string[];
  /** Entry i's failure reason; by default every 10th says "timeout", the rest "connection refused". */
  reason?: (i: number) => string;
  /** Entry i is dead-lettered at `start + i` seconds. */
  start?: Date;
  /** Entries per pipeline round trip. */
  batch?: number;
}

export function defaultFillReason(i: number): string {
  return i % 10 === 0 ? `Error: timeout after 30000 ms (#${i})` : `Error: connection refused (#${i})`;
}

/**
 * Writes `count` tickwork DLQ entries straight into Redis in BullMQ's layout (fillWaiting, bulk-fill.ts): a
 * million in well under a minute, where adding them one by one through BullMQ would take several. For
 * benchmarks and tests of large DLQs; the entries are what the worker writes for a job that failed its last
 * attempt.
 */
export async function fillDeadLetters(redis: RedisClient, opts: FillOptions): Promise<void> {
  const start = (opts.start ?? new Date('2024-05-01T00:00:00Z')).getTime();
  const reasonOf = opts.reason ?? defaultFillReason;
  function* entries(): Generator<WaitingJob> {
    for (let i = 0; i < opts.count; i++) {
      const { id, entry } = filledEntry(opts, i, start, reasonOf(i));
      yield { id, name: entry.jobName, data: JSON.stringify(entry), timestamp: start + i * 1000 };
    }
  }
  await fillWaiting(redis, opts.prefix, dlqName(opts.queue), entries(), opts.batch);
}

/** Entry i of a fill, as written (for a test's expectations). */
export function filledEntryOf(opts: FillOptions, i: number): FilledEntry {
  const start = (opts.start ?? new Date('2024-05-01T00:00:00Z')).getTime();
  const { id, entry } = filledEntry(opts, i, start, (opts.reason ?? defaultFillReason)(i));
  return { dlqJobId: id, jobName: entry.jobName, reason: entry.failureReason, deadLetteredAt: entry.deadLetteredAt };
}

function filledEntry(opts: FillOptions, i: number, start: number, reason: string): { id: string; entry: DeadLetterEntry } {
  const jobName = opts.jobNames[i % opts.jobNames.length] ?? 'job';
  const originalJobId = `fill-${i}`;
  const at = new Date(start + i * 1000).toISOString();
  const id = deadLetterJobId({ id: originalJobId, timestamp: start + i * 1000 });
  const entry: DeadLetterEntry = {
    v: 1,
    originQueue: opts.queue,
    jobName,
    payload: { n: i },
    originalJobId,
    originalTimestamp: start + i * 1000,
    originalOptions: { attempts: 3 },
    idempotencyKey: `${jobName}#${originalJobId}`,
    failureReason: reason,
    stack: `${reason}\n    at handler (/app/jobs/${jobName}.ts:12:11)`,
    attemptsMade: 3,
    firstFailedAt: at,
    lastFailedAt: at,
    deadLetteredAt: at,
    nominalTime: null,
    scheduleId: null,
    redriveCount: 0,
    rootDlqJobId: id,
    history: [],
  };
  return { id, entry };
}
