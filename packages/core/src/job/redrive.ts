import { z } from 'zod';
import { epochMs, readJobOption, validOrUndefined } from './job-option.js';

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
