import { dlqName, jobKeyOf, type QueueSet } from '@tickwork/core';

/**
 * Where a job went when it left its queue, so "where is job X?" has an answer after X is gone: a job that
 * failed for the last time is removed from its queue once its DLQ entry exists (move.ts), and an entry is
 * removed from the DLQ once its re-drive is enqueued (admin.ts), each time under a new id.
 *
 * One small key per step, `<run prefix>:meta:trail:<queue>:<job id>` (on the queue's slot on a cluster),
 * holding the step as JSON, written when the step is taken and expiring after TRAIL_TTL_S:
 * - `<queue>:<id>` → `{ to: 'dead-letter', queue: '<queue>.dlq', id: <DLQ id> }`;
 * - `<queue>.dlq:<DLQ id>` → `{ to: 'redrive', queue: '<queue>', id: <new job id> }`.
 * Only final failures and re-drives write one: nothing on a job's normal path.
 */
export interface TrailStep {
  to: 'dead-letter' | 'redrive';
  /** The queue the job went to, and its id there. */
  queue: string;
  id: string;
  /** When, ISO. */
  at: string;
}

/** How long a step is remembered: 30 days. */
export const TRAIL_TTL_S = 30 * 24 * 3600;

export function trailKey(queues: QueueSet, queue: string, jobId: string): string {
  return `${queues.keyspace(queue).runPrefix}:meta:trail:${queue}:${jobId}`;
}

/** Records that job `jobId` of `queue` went on to `step`. */
export async function noteTrail(queues: QueueSet, queue: string, jobId: string, step: TrailStep): Promise<void> {
  await queues.redis.set(trailKey(queues, queue, jobId), JSON.stringify(step), 'EX', TRAIL_TTL_S);
}

/** Where job `jobId` of `queue` went, if a step was recorded (and is still remembered). */
export async function readTrail(queues: QueueSet, queue: string, jobId: string): Promise<TrailStep | undefined> {
  const raw = await queues.redis.get(trailKey(queues, queue, jobId));
  if (raw === null) return undefined;
  try {
    const s = JSON.parse(raw) as Partial<TrailStep>;
    const valid = (s.to === 'dead-letter' || s.to === 'redrive') && typeof s.queue === 'string' && typeof s.id === 'string' && typeof s.at === 'string';
    return valid ? (s as TrailStep) : undefined;
  } catch {
    return undefined;
  }
}

/** One stop along a job's trail: a job (or DLQ entry) id in a queue, and the step that took it there. */
export interface TrailStop {
  queue: string;
  id: string;
  /** Whether it is there now. */
  exists: boolean;
  /** How it got there (absent for the first stop). */
  via?: TrailStep;
}

/**
 * The trail onward from job `jobId` of `queue`: the job itself, then each step recorded after it, up to
 * `maxSteps` (a job dead-lettered and re-driven many times). The last stop is where the job is, if it exists.
 */
export async function followTrail(queues: QueueSet, queue: string, jobId: string, maxSteps = 20): Promise<TrailStop[]> {
  const exists = async (q: string, id: string) => (await queues.redis.exists(jobKeyOf(queues.keyspace(q), q, id))) === 1;
  const stops: TrailStop[] = [{ queue, id: jobId, exists: await exists(queue, jobId) }];
  let at = { queue, id: jobId };
  for (let i = 0; i < maxSteps; i++) {
    const step = await readTrail(queues, at.queue, at.id);
    // A step must lead where tickwork sends jobs: from a queue to its DLQ, or from a DLQ back to its queue.
    if (!step || (step.to === 'dead-letter' ? step.queue !== dlqName(at.queue) : dlqName(step.queue) !== at.queue)) break;
    stops.push({ queue: step.queue, id: step.id, exists: await exists(step.queue, step.id), via: step });
    at = step;
  }
  return stops;
}
