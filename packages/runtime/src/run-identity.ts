import type { AnyJob } from './define-job.js';

/** What the worker needs to know about a delivery, independent of BullMQ's Job class. */
export interface Delivery {
  id: string;
  name: string;
  data: unknown;
  /** Set for jobs produced by a BullMQ job scheduler: the scheduler id. */
  repeatJobKey?: string | undefined;
  /** For scheduler-produced jobs, BullMQ records the occurrence's due time (ms) here. */
  prevMillis?: number | undefined;
}

/** The time a scheduled occurrence was due, or undefined for on-demand jobs. */
export function nominalTimeOf(delivery: Delivery): Date | undefined {
  if (!delivery.repeatJobKey) return undefined;
  if (typeof delivery.prevMillis === 'number') return new Date(delivery.prevMillis);
  // BullMQ 6 leaves prevMillis unset on `every` schedulers' jobs; their id `repeat:<id>:<due ms>` carries it.
  const due = /^repeat:.+:(\d+)$/.exec(delivery.id)?.[1];
  return due === undefined ? undefined : new Date(Number(due));
}

/**
 * The key that names one logical run across retries, redeliveries and duplicate enqueues:
 * - a scheduled occurrence: `<schedule id>@<nominal time, ISO UTC>`, the same whichever replica enqueued it;
 * - a job with `idempotencyKey(data)`: `<job name>@<that key>`;
 * - otherwise the job id.
 */
export function idempotencyKeyOf(job: AnyJob, delivery: Delivery, data: unknown): string {
  const nominal = nominalTimeOf(delivery);
  if (delivery.repeatJobKey && nominal) return `${delivery.repeatJobKey}@${nominal.toISOString()}`;
  if (job.idempotencyKey) return `${job.name}@${job.idempotencyKey(data)}`;
  return `${job.name}#${delivery.id}`;
}
