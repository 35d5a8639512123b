import type { AnyJob } from './define-job.js';
import { occurrenceKey } from './schedule/keys.js';
import type { RedriveMeta } from './dlq/entry.js';

/** What the worker needs to know about a delivery, independent of BullMQ's Job class. */
export interface Delivery {
  id: string;
  name: string;
  data: unknown;
  /** Set for jobs produced by a BullMQ job scheduler: the scheduler id. */
  repeatJobKey?: string | undefined;
  /** For scheduler-produced jobs, BullMQ records the occurrence's due time (ms) here. */
  prevMillis?: number | undefined;
  /** Set on a job re-driven from the DLQ: the identity of the original run, which the re-drive keeps. */
  redrive?: RedriveMeta | undefined;
  /** Set for occurrences enqueued by the tickwork scheduler (see scheduledRunOf). */
  scheduled?: ScheduledRun | undefined;
}

/** What the scheduler attaches to an occurrence's job (in its BullMQ options under SCHEDULED_RUN_OPTION). */
export interface ScheduledRun {
  schedule: string;
  /** Nominal fire time, ms since the epoch. */
  nominal: number;
  /** Enqueued by missed-run catch-up rather than on time. */
  catchUp: boolean;
}

/**
 * BullMQ stores unknown job options verbatim, so the occurrence identity travels with the job across
 * retries without touching its payload (which belongs to the job's schema).
 */
export const SCHEDULED_RUN_OPTION = 'tickwork';

/** Reads the scheduler's marker from a job's options; anything malformed counts as "not scheduled". */
export function scheduledRunOf(opts: unknown): ScheduledRun | undefined {
  const raw = (opts as Record<string, unknown> | undefined)?.[SCHEDULED_RUN_OPTION] as Partial<ScheduledRun> | undefined;
  if (!raw || typeof raw.schedule !== 'string' || typeof raw.nominal !== 'number') return undefined;
  return { schedule: raw.schedule, nominal: raw.nominal, catchUp: raw.catchUp === true };
}

export function isCatchUpOf(delivery: Delivery): boolean {
  return delivery.scheduled?.catchUp === true;
}

/** The time a scheduled occurrence was due, or undefined for on-demand jobs. */
export function nominalTimeOf(delivery: Delivery): Date | undefined {
  if (delivery.redrive) return delivery.redrive.nominalTime === undefined ? undefined : new Date(delivery.redrive.nominalTime);
  if (delivery.scheduled) return new Date(delivery.scheduled.nominal);
  if (delivery.repeatJobKey && typeof delivery.prevMillis === 'number') return new Date(delivery.prevMillis);
  // BullMQ 6.7 does not store prevMillis in the opts of scheduler-made jobs (checked: opts hold only
  // attempts/timestamp/jobId/repeat/delay); their id `repeat:<scheduler id>:<due ms>` carries the due time.
  if (delivery.repeatJobKey) {
    const due = delivery.id.startsWith(`repeat:${delivery.repeatJobKey}:`) ? Number(delivery.id.slice(delivery.repeatJobKey.length + 8)) : NaN;
    if (Number.isSafeInteger(due)) return new Date(due);
  }
  return undefined;
}

/**
 * The key that names one logical run across retries, redeliveries and duplicate enqueues:
 * - a job re-driven from the DLQ: the original run's key, carried in its re-drive meta (its job id is new);
 * - a scheduled occurrence: `<schedule id>@<nominal time, ISO UTC>`, the same whichever replica enqueued it;
 * - a job with `idempotencyKey(data)`: `<job name>@<that key>`;
 * - otherwise the job id.
 */
export function idempotencyKeyOf(job: AnyJob, delivery: Delivery, data: unknown): string {
  if (delivery.redrive) return delivery.redrive.idempotencyKey;
  const nominal = nominalTimeOf(delivery);
  if (delivery.scheduled && nominal) return occurrenceKey(delivery.scheduled.schedule, nominal);
  if (delivery.repeatJobKey && nominal) return `${delivery.repeatJobKey}@${nominal.toISOString()}`;
  if (job.idempotencyKey) return `${job.name}@${job.idempotencyKey(data)}`;
  return `${job.name}#${delivery.id}`;
}
