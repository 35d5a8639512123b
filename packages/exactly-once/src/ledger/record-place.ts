import type { AnyJob } from '@tickwork/core';
import { idempotencyWindowMs } from '@tickwork/core';
import { isGeneratedJobId, type Delivery } from '@tickwork/core';
import { policiesOf } from '@tickwork/core';
import type { RunRecordPlace } from './ledger.js';

/** Per job definition: its own window and its schedule's catch-up window, computed once. */
const windowsOf = new WeakMap<AnyJob, { own: number | undefined; catchUp: number }>();

/**
 * Where a run's ledger record lives, and so how long a duplicate of it is suppressed once it is done (the
 * README's "How long duplicates are suppressed" states these windows):
 * - a run named by a job id BullMQ generated: in the job's own hash (`jobKey`), for as long as BullMQ keeps
 *   the job. Nothing can add a job with that id again (BullMQ draws ids from a counter and refuses integer
 *   ids from producers), so the only duplicates are deliveries of the same job — a stall, an operator's
 *   retry — and those can only happen while BullMQ keeps the job.
 * - a run with a key of its own (`idempotencyKey`, a job id the producer chose, a re-drive): its own key,
 *   for the job's `idempotencyWindow` or else `defaultWindowMs`. A producer may add the key again at any
 *   time, so the window is a choice, made per job.
 * - a scheduled occurrence: its own key, for that window or its schedule's catch-up window, whichever is
 *   longer: the scheduler enqueues an occurrence again (after a replica died mid-way, or a catch-up) only
 *   within the catch-up window.
 */
export function runRecordPlaceOf(job: AnyJob, delivery: Delivery, jobKey: string, defaultWindowMs: number, queue?: string): RunRecordPlace {
  const keyed = delivery.redrive || delivery.scheduled || delivery.repeatJobKey || job.idempotencyKey;
  if (!keyed && isGeneratedJobId(delivery.id)) return { kind: 'job', jobKey, queue };
  let w = windowsOf.get(job);
  if (!w) {
    w = { own: idempotencyWindowMs(job), catchUp: job.schedule ? policiesOf(job.name, job.schedule).catchUpWindowMs : 0 };
    windowsOf.set(job, w);
  }
  const own = w.own ?? defaultWindowMs;
  return { kind: 'key', windowMs: delivery.scheduled ? Math.max(own, w.catchUp) : own, queue };
}
