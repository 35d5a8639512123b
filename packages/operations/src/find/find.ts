import { dlqName, jobKeyOf, TickworkError, type QueueSet } from '@tickwork/core';
import type { Schedules } from '@tickwork/schedules';
import { readTrail } from '../dlq/trail.js';

/** An id no job or schedule can have (not a string, empty, too long, control characters): a 400, not a search. */
export class FindInputError extends TickworkError {
  override name = 'FindInputError';
}

/** Longer than any id tickwork makes (a re-drive of an escaped custom id) by far; still bounds the keys read. */
export const MAX_FIND_ID_LENGTH = 512;

/** The id to look for, trimmed; FindInputError names what is wrong with it. */
export function checkedFindId(raw: unknown): string {
  if (raw === undefined) throw new FindInputError('give an id: ?id=<job, dead-letter or schedule id>');
  if (typeof raw !== 'string') throw new FindInputError('give one id, once');
  const id = raw.trim();
  if (id === '') throw new FindInputError('give an id: ?id=<job, dead-letter or schedule id>');
  if (id.length > MAX_FIND_ID_LENGTH) throw new FindInputError(`an id is at most ${MAX_FIND_ID_LENGTH} characters; this one has ${id.length}`);
  // eslint-disable-next-line no-control-regex -- control characters are exactly what is refused
  if (/[\u0000-\u001f\u007f]/.test(id)) throw new FindInputError('an id has no control characters (tabs, line breaks, NUL)');
  return id;
}

/**
 * Something with the id:
 * - `job`: a job of `queue`; `exists: false` when it left the queue and a trail step says where (trail.ts);
 * - `dead-letter`: an entry of `queue`'s DLQ (`queue` is the origin queue);
 * - `schedule`: a catalog or runtime schedule.
 */
export type FindHit = { kind: 'job'; queue: string; id: string; exists: boolean } | { kind: 'dead-letter'; queue: string; id: string } | { kind: 'schedule'; id: string; source: 'catalog' | 'runtime' };

export interface FindSource {
  queues: QueueSet;
  /** Origin queues to look in (each with its DLQ): the catalog's and any served before. */
  queueNames: readonly string[];
  schedules: Pick<Schedules, 'get'>;
  /** The catalog's scheduled job names (a catalog schedule no scheduler has stored yet is still found). */
  catalogSchedules: readonly string[];
}

/**
 * Everything with the id `id` (checked with checkedFindId first): per queue an EXISTS of the job, one of the
 * DLQ entry and a GET of the trail step, and one schedule read. No scan: the cost is per queue, not per job.
 */
export async function findById(src: FindSource, id: string): Promise<FindHit[]> {
  const { queues } = src;
  const exists = async (q: string) => (await queues.redis.exists(jobKeyOf(queues.keyspace(q), q, id))) === 1;
  const perQueue = await Promise.all(
    src.queueNames.map(async (queue): Promise<FindHit[]> => {
      const [job, entry, trail] = await Promise.all([exists(queue), exists(dlqName(queue)), readTrail(queues, queue, id)]);
      return [
        ...(job || trail ? [{ kind: 'job' as const, queue, id, exists: job }] : []),
        ...(entry ? [{ kind: 'dead-letter' as const, queue, id }] : []),
      ];
    }),
  );
  const view = await src.schedules.get(id);
  const schedule: FindHit[] = view
    ? [{ kind: 'schedule', id, source: view.source }]
    : src.catalogSchedules.includes(id)
      ? [{ kind: 'schedule', id, source: 'catalog' }]
      : [];
  return [...perQueue.flat(), ...schedule];
}
