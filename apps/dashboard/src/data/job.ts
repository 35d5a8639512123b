import { deliveryOf, jobKeyOf, manualOccurrenceKey, nominalTimeOf, occurrenceKey, scheduleIdOf, type QueueSet, type RedriveMeta } from '@tickwork/core';
import { followTrail, type TrailStop } from '@tickwork/operations';
import { Job } from 'bullmq';

/** Log lines shown on a job page: the first ones (BullMQ keeps them oldest first). */
export const LOG_LINES = 200;

/** The run of a schedule a job is: the history record's id (`<schedule>@<nominal>` or `@manual-<token>`). */
export interface OccurrenceLink {
  schedule: string;
  occurrence: string;
  nominal: string | null;
}

export interface JobDetail {
  queue: string;
  id: string;
  name: string;
  state: string;
  data: unknown;
  opts: Record<string, unknown>;
  attemptsMade: number;
  attemptsStarted: number;
  progress: unknown;
  returnvalue: unknown;
  failedReason: string | null;
  /** One stack per failed attempt that threw an Error, oldest first. */
  stacktrace: string[];
  addedAt: string | null;
  processedAt: string | null;
  finishedAt: string | null;
  delayMs: number;
  logs: string[];
  logCount: number;
  occurrence: OccurrenceLink | undefined;
  /** Set on a job re-driven from a DLQ: its trips through the DLQ so far. */
  redrive: RedriveMeta | undefined;
}

/** A job whose hash BullMQ cannot read (its data or options are not JSON): its raw fields, shown as text. */
export interface UnreadableJob {
  queue: string;
  id: string;
  reason: string;
  fields: Record<string, string>;
}

export type JobLookup =
  | { kind: 'job'; job: JobDetail; trail: TrailStop[] }
  | { kind: 'unreadable'; job: UnreadableJob; trail: TrailStop[] }
  /** Not in the queue: `trail` (first stop: the id asked for) says where it went, if anywhere is known. */
  | { kind: 'gone'; trail: TrailStop[] };

const iso = (ms: number | undefined): string | null => (ms ? new Date(ms).toISOString() : null);

function occurrenceOf(job: Job): OccurrenceLink | undefined {
  const delivery = deliveryOf(job);
  const schedule = scheduleIdOf(delivery);
  if (!schedule) return undefined;
  const nominal = nominalTimeOf(delivery);
  const manual = delivery.scheduled?.m;
  // A re-drive keeps its run's idempotency key, which for a scheduled run is its occurrence's id.
  const occurrence = delivery.redrive
    ? delivery.redrive.idempotencyKey
    : manual !== undefined
      ? manualOccurrenceKey(schedule, manual)
      : nominal
        ? occurrenceKey(schedule, nominal)
        : undefined;
  return occurrence === undefined ? undefined : { schedule, occurrence, nominal: nominal?.toISOString() ?? null };
}

/** Decoding errors of a job hash BullMQ cannot parse; anything else (Redis down) is the dashboard's failure. */
function isDecodingError(err: unknown): err is Error {
  return err instanceof SyntaxError || err instanceof TypeError || err instanceof RangeError;
}

/** Job `id` of origin queue `queue` as its page shows it, with the trail onward from it (trail.ts). */
export async function loadJob(queues: QueueSet, queue: string, id: string): Promise<JobLookup> {
  const q = queues.get(queue);
  const trail = await followTrail(queues, queue, id);
  let job: Job | undefined;
  try {
    job = await Job.fromId(q, id);
  } catch (err) {
    if (!isDecodingError(err)) throw err;
    const fields = await queues.redis.hgetall(jobKeyOf(queues.keyspace(queue), queue, id));
    return { kind: 'unreadable', job: { queue, id, reason: `${err.name}: ${err.message}`, fields }, trail };
  }
  if (!job) return { kind: 'gone', trail };
  const [state, logs] = await Promise.all([job.getState(), q.getJobLogs(id, 0, LOG_LINES - 1, true)]);
  return {
    kind: 'job',
    trail,
    job: {
      queue,
      id,
      name: job.name,
      state,
      data: job.data,
      opts: job.opts as Record<string, unknown>,
      attemptsMade: job.attemptsMade,
      attemptsStarted: job.attemptsStarted,
      progress: job.progress,
      returnvalue: job.returnvalue,
      failedReason: job.failedReason || null,
      stacktrace: job.stacktrace ?? [],
      addedAt: iso(job.timestamp),
      processedAt: iso(job.processedOn),
      finishedAt: iso(job.finishedOn),
      delayMs: job.delay,
      logs: logs.logs,
      logCount: logs.count,
      occurrence: occurrenceOf(job),
      redrive: deliveryOf(job).redrive,
    },
  };
}
