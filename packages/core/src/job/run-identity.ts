import type { Job } from 'bullmq';
import { z } from 'zod';
import type { AnyJob } from './define-job.js';
import { InvalidJobOptionError } from '../errors.js';
import { dateFromMs, epochMs, readJobOption, validOrUndefined } from './job-option.js';
import { REDRIVE_OPTION, redriveMeta, type RedriveMeta } from './redrive.js';
import { isoOfMs } from './iso-time.js';
import { OVERLAP_POLICIES, type OverlapPolicy } from './overlap-policy.js';

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
  /** Set for an occurrence run in a batch (occurrence-batch.ts): the batch's job id (`id` is the occurrence's own). */
  batch?: string | undefined;
}

/** What the scheduler attaches to an occurrence's job (in its BullMQ options under SCHEDULED_RUN_OPTION). */
export interface ScheduledRun {
  schedule: string;
  /** Nominal fire time, ms since the epoch. */
  nominal: number;
  /** Enqueued by missed-run catch-up rather than on time. */
  catchUp: boolean;
  /**
   * What the run needs from its schedule, carried so the hot path reads nothing new (absent on occurrences
   * enqueued before the schedule store): `v` the definition's version (the worker skips the run if the
   * schedule changed or is gone), `o` the overlap policy and `h` the history cap when not the default,
   * `sa` slow-after ms for watched schedules, `m` the token of a manual run (runNow).
   */
  v?: number | undefined;
  o?: OverlapPolicy | undefined;
  h?: number | undefined;
  sa?: number | undefined;
  m?: string | undefined;
  /**
   * Set on an occurrence that left its batch (occurrence-batch.ts) as a job of its own: `a` the attempts it
   * made in the batch (its attempts go on from there; 0 after the batch was redelivered), and `f` when it
   * failed for good in the batch, the reason, which this job fails with at once so the failure reaches the
   * failed set and the dead-letter queue as any run's does.
   */
  a?: number | undefined;
  f?: string | undefined;
}

/**
 * BullMQ stores unknown job options verbatim, so the occurrence identity travels with the job across
 * retries without touching its payload (which belongs to the job's schema).
 */
export const SCHEDULED_RUN_OPTION = 'tickworkOccurrence';

export const scheduledRun = z.object({
  schedule: z.string().min(1),
  nominal: epochMs,
  catchUp: z.boolean().default(false),
  v: z.number().int().positive().optional(),
  o: z.enum(OVERLAP_POLICIES as [OverlapPolicy, ...OverlapPolicy[]]).optional(),
  h: z.number().int().positive().optional(),
  sa: z.number().int().positive().optional(),
  m: z.string().min(1).max(100).optional(),
  a: z.number().int().min(0).max(1_000_000).optional(),
  f: z.string().max(10_000).optional(),
});

/** Reads the scheduler's marker from a job's options; anything malformed counts as "not scheduled". */
export function scheduledRunOf(opts: unknown): ScheduledRun | undefined {
  return validOrUndefined(readJobOption(opts, SCHEDULED_RUN_OPTION, scheduledRun));
}

/**
 * The delivery view of a BullMQ job: what the worker, the DLQ and the history need to identify its run.
 * Lenient: a malformed tickwork option counts as absent, so the DLQ can always describe the job.
 */
export function deliveryOf(job: Job): Delivery {
  return readDelivery(job, false);
}

/**
 * The delivery view the worker runs a job under. A tickwork option that is present but malformed throws
 * InvalidJobOptionError naming it: running such a job as if it were on-demand would give it the wrong
 * idempotency key, nominal time and schedule.
 */
export function checkedDeliveryOf(job: Job): Delivery {
  return readDelivery(job, true);
}

function readDelivery(job: Job, strict: boolean): Delivery {
  const scheduled = readJobOption(job.opts, SCHEDULED_RUN_OPTION, scheduledRun);
  const redrive = readJobOption(job.opts, REDRIVE_OPTION, redriveMeta);
  if (strict) {
    for (const read of [scheduled, redrive]) if (read instanceof InvalidJobOptionError) throw read;
  }
  return {
    id: String(job.id),
    name: job.name,
    data: job.data,
    repeatJobKey: job.repeatJobKey,
    prevMillis: job.opts.prevMillis,
    scheduled: validOrUndefined(scheduled),
    redrive: validOrUndefined(redrive),
  };
}

/** The schedule a run belongs to (kept through a re-drive), or undefined for on-demand jobs. */
export function scheduleIdOf(delivery: Delivery): string | undefined {
  if (delivery.redrive) return delivery.redrive.scheduleId;
  return delivery.scheduled?.schedule ?? delivery.repeatJobKey;
}

export function isCatchUpOf(delivery: Delivery): boolean {
  return delivery.scheduled?.catchUp === true;
}

/** The time a scheduled occurrence was due, or undefined for on-demand jobs. */
export function nominalTimeOf(delivery: Delivery): Date | undefined {
  if (delivery.redrive) return dateFromMs(delivery.redrive.nominalTime);
  if (delivery.scheduled) return dateFromMs(delivery.scheduled.nominal);
  const prev = delivery.repeatJobKey ? dateFromMs(delivery.prevMillis) : undefined;
  if (prev) return prev;
  // BullMQ 6.7 does not store prevMillis in the opts of scheduler-made jobs (checked: opts hold only
  // attempts/timestamp/jobId/repeat/delay); their id `repeat:<scheduler id>:<due ms>` carries the due time.
  if (delivery.repeatJobKey) {
    const due = delivery.id.startsWith(`repeat:${delivery.repeatJobKey}:`) ? Number(delivery.id.slice(delivery.repeatJobKey.length + 8)) : NaN;
    return dateFromMs(due);
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
  if (delivery.scheduled?.m !== undefined) return manualOccurrenceKey(delivery.scheduled.schedule, delivery.scheduled.m);
  if (delivery.scheduled && nominal) return occurrenceKey(delivery.scheduled.schedule, nominal);
  if (delivery.repeatJobKey && nominal) return `${delivery.repeatJobKey}@${nominal.toISOString()}`;
  if (job.idempotencyKey) return `${job.name}@${job.idempotencyKey(data)}`;
  return `${job.name}#${delivery.id}`;
}


/** BullMQ's own ids are integers from a counter; it refuses integer ids from producers (`Custom Id cannot be integers`). */
export function isGeneratedJobId(id: string): boolean {
  return `${Number.parseInt(id, 10)}` === id;
}

/** `<schedule>@<nominal ISO UTC>`: the occurrence's idempotency key and its history id. */
export function occurrenceKey(schedule: string, nominal: Date): string {
  return `${schedule}@${isoOfMs(nominal.getTime())}`;
}

/** A manual run's (runNow) idempotency key and history id: `<schedule>@manual-<token>`. */
export function manualOccurrenceKey(schedule: string, token: string): string {
  return `${schedule}@manual-${token}`;
}
