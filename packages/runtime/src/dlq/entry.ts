import { z } from 'zod';
import { epochMs, readJobOption, validOrUndefined } from '../job-option.js';

/** One earlier trip through the DLQ, kept on the entry so a job that fails again shows its whole story. */
export const deadLetterHistoryItem = z.object({
  jobId: z.string(),
  failureReason: z.string(),
  attemptsMade: z.number().int().nonnegative(),
  firstFailedAt: z.iso.datetime(),
  lastFailedAt: z.iso.datetime(),
  deadLetteredAt: z.iso.datetime(),
  redrivenAt: z.iso.datetime(),
});
export type DeadLetterHistoryItem = z.output<typeof deadLetterHistoryItem>;

/**
 * What tickwork stores on a re-driven job (in its BullMQ options under REDRIVE_OPTION), so the run keeps
 * its identity: the same idempotency key (an effect that already happened is not repeated), the nominal
 * fire time of a scheduled run (a billing run re-driven in March still bills February), and the history.
 */
export const redriveMeta = z.object({
  idempotencyKey: z.string().min(1),
  nominalTime: epochMs.optional(),
  scheduleId: z.string().min(1).optional(),
  redriveCount: z.number().int().positive(),
  /** DLQ job id of the first dead-lettering, the stem of every later re-drive id. */
  rootDlqJobId: z.string(),
  history: z.array(deadLetterHistoryItem),
});
export type RedriveMeta = z.output<typeof redriveMeta>;

/**
 * BullMQ stores unknown job options verbatim (optsAsJSON/optsFromJSON pass them through), which keeps the
 * meta out of the payload: the handler's schema, strict or not, never sees it, and non-object payloads work.
 */
export const REDRIVE_OPTION = 'tickworkRedrive';

/**
 * The re-drive meta of a job's options, or undefined for a job that was never re-driven or whose meta is
 * malformed (the worker refuses such a job: see checkedDeliveryOf).
 */
export function redriveMetaOf(opts: unknown): RedriveMeta | undefined {
  return validOrUndefined(readJobOption(opts, REDRIVE_OPTION, redriveMeta));
}

/**
 * The data of a DLQ job: everything needed to understand the failure and to re-drive it. A schema, not
 * only a type, because a DLQ is a plain BullMQ queue that anything can add to (Bull Board's "add job",
 * another program): what is read back is checked, never trusted.
 */
export const deadLetterEntry = z.object({
  /** Format version, so a future change can read old entries. */
  v: z.literal(1),
  originQueue: z.string(),
  jobName: z.string(),
  /** The payload exactly as it was stored on the origin job (it may be the invalid one). */
  payload: z.unknown().optional(),
  originalJobId: z.string(),
  /** Creation time (ms) of the origin job; with originalJobId it identifies that exact job. */
  originalTimestamp: z.number(),
  /** The origin job's BullMQ options without tickwork's own meta. */
  originalOptions: z.record(z.string(), z.unknown()),
  idempotencyKey: z.string(),
  failureReason: z.string(),
  /**
   * Set only on an entry made from the job's raw Redis hash, because tickwork could not read the job
   * normally: why (e.g. its data is not JSON). Its other fields hold what could be read.
   */
  unparsedReason: z.string().optional(),
  /** Stack of the last attempt, when the thrown value had one. */
  stack: z.string().nullable(),
  attemptsMade: z.number(),
  firstFailedAt: z.string(),
  lastFailedAt: z.string(),
  deadLetteredAt: z.string(),
  /** For scheduled runs: the occurrence's due time and its scheduler id. */
  nominalTime: z.string().nullable(),
  scheduleId: z.string().nullable(),
  /** How many times this logical run was re-driven before this failure. */
  redriveCount: z.number(),
  rootDlqJobId: z.string(),
  history: z.array(deadLetterHistoryItem),
});
export type DeadLetterEntry = z.output<typeof deadLetterEntry>;

/** A DLQ entry with where it lives. */
export interface DeadLetter {
  dlqQueue: string;
  dlqJobId: string;
  entry: DeadLetterEntry;
}

/**
 * A job in a DLQ that tickwork did not write, or whose data is not an entry tickwork can read: shown and
 * purgeable like any entry, never re-driven (there is nothing to re-drive it with).
 */
export interface ForeignDlqJob {
  dlqQueue: string;
  dlqJobId: string;
  entry: null;
  foreign: {
    /** The BullMQ job's name, as stored (may be empty). */
    name: string;
    data: unknown;
    /** When it was added to the DLQ (ISO). */
    addedAt: string;
    /** Why it is not a tickwork entry, for the operator. */
    problem: string;
  };
}

/** Whatever a DLQ holds: a tickwork entry or something else. */
export type DlqItem = DeadLetter | ForeignDlqJob;
