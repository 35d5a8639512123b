import { z } from 'zod';
import { fieldIssues, InvalidJobOptionError } from '../errors.js';
import { scheduledRun, type ScheduledRun } from './run-identity.js';

/**
 * Batch delivery (docs/schedules.md, "Batch delivery"): the on-time occurrences of one job due at one
 * instant travel as one BullMQ job, a batch, rather than one job each. The batch's job name is this: a
 * catalog job's name cannot contain ':' (catalog.ts), so no handler is ever called with a batch, and a
 * worker that does not know batches fails one as an unknown job rather than running it.
 */
export const OCCURRENCE_BATCH_JOB = 'tickwork:occurrences';

/** How many occurrences at most one batch carries: SCHEDULE_BATCH_MAX's ceiling. */
export const MAX_OCCURRENCE_BATCH = 500;

/** One occurrence in a batch: the job id it would have had alone (and has if it leaves the batch), its marker and payload. */
export interface BatchedOccurrence {
  id: string;
  run: ScheduledRun;
  data?: unknown;
}

/** A batch's payload: the catalog job its occurrences run, and the occurrences. */
export interface OccurrenceBatch {
  job: string;
  runs: BatchedOccurrence[];
}

const batchSchema = z.object({
  job: z.string().min(1),
  runs: z
    .array(z.object({ id: z.string().min(1).max(1000), run: scheduledRun, data: z.unknown().optional() }))
    .min(1)
    .max(MAX_OCCURRENCE_BATCH),
});

/** A batch's payload, read strictly: a batch written by anything else (or damaged) is refused with each bad field. */
export function occurrenceBatchOf(data: unknown): OccurrenceBatch {
  const parsed = batchSchema.safeParse(data);
  if (!parsed.success) throw new InvalidJobOptionError('occurrence batch', fieldIssues(parsed.error.issues));
  return parsed.data as OccurrenceBatch;
}

/**
 * The batch's job id: its first occurrence's with the count, `<first>#<count>`, so a replica that re-plans
 * the same claims adds the same batch. No occurrence's own id ends so (its time, or a manual run's token,
 * follows its last '@'), and BullMQ refuses ':' in ids.
 */
export function occurrenceBatchId(first: string, count: number): string {
  return `${first}#${count}`;
}
