import { z } from 'zod';
import { deadLetterHistoryItem } from '@tickwork/core';


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
    /** Its data, parsed; null when it is not JSON (see `raw`). */
    data: unknown;
    /** The data exactly as stored when it is not JSON (shown, exported and purgeable as it is); else null. */
    raw: string | null;
    /** When it was added to the DLQ (ISO). */
    addedAt: string;
    /** Why it is not a tickwork entry, for the operator. */
    problem: string;
  };
}

/** Whatever a DLQ holds: a tickwork entry or something else. */
export type DlqItem = DeadLetter | ForeignDlqJob;
