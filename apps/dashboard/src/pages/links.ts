import { deadLetterPath } from './dead-letters.js';
import { schedulePath } from './schedule-actions.js';

/**
 * The paths of the things the pages name, in one place, so a job, a dead letter or an occurrence links the
 * same way wherever it appears. Ids are the application's own text: always encoded.
 */

/** A job's page (an origin queue's job; a DLQ's goes to its dead-letter page). */
export function jobPath(queue: string, id: string): string {
  return queue.endsWith('.dlq') ? deadLetterPath(queue.slice(0, -'.dlq'.length), id) : `/jobs/${encodeURIComponent(queue)}/${encodeURIComponent(id)}`;
}

/** The same job on Bull Board (its single-page app's route `/queue/:name/:jobId`). */
export function boardJobPath(queue: string, id: string): string {
  return `/queues/queue/${encodeURIComponent(queue)}/${encodeURIComponent(id)}`;
}

/** The id of an occurrence's row in its schedule's history table. */
export function occurrenceAnchor(occurrence: string): string {
  return `occ-${occurrence}`;
}

/** An occurrence's row on its schedule's page. */
export function occurrencePath(schedule: string, occurrence: string): string {
  return `${schedulePath(schedule)}#${encodeURIComponent(occurrenceAnchor(occurrence))}`;
}

/** A queue's page: its charts over time (routes/overview.ts). */
export function queuePath(queue: string): string {
  return `/queue/${encodeURIComponent(queue)}`;
}

/** The search for an id across every queue, DLQ and schedule. */
export function findPath(id: string): string {
  return `/find?id=${encodeURIComponent(id)}`;
}
