import { unreadableReason, type FailedAttempt, type FetchedBatchJob } from '@tickwork/bullmq-engine';
import { cancellationReason } from '@tickwork/operations';
import { describeIssues, PayloadValidationError, validatePayload, type AnyJob, type BatchItem } from '@tickwork/core';
import type { CancelListener } from '../cancel-listener.js';

export interface Admitted {
  /** The jobs the handler gets. */
  items: BatchItem<unknown>[];
  /** Jobs that can never run (data or options not JSON, another job's name, a payload failing the schema): they fail alone, for good. */
  invalid: FailedAttempt[];
  /** Jobs an operator cancelled before their batch started. */
  cancelled: FailedAttempt[];
}

/**
 * Sorts a fetched batch into the jobs its handler gets and those that end before it (batch-runner.ts): one
 * bad job never holds up the others. Checked in memory: no round trip.
 */
export function admit(def: AnyJob, queue: string, jobs: readonly FetchedBatchJob[], cancels: CancelListener | undefined): Admitted {
  const out: Admitted = { items: [], invalid: [], cancelled: [] };
  for (const [id, name, raw, attemptsMade, unreadableOptions] of jobs) {
    const request = cancels?.pending(queue, id);
    if (request) {
      out.cancelled.push({ id, attemptsMade, reason: cancellationReason(request), final: true });
      continue;
    }
    const data = parsedOr(raw, UNREADABLE);
    // The fetch hands over options only when they did not decode (the fast store's script).
    if (data === UNREADABLE || unreadableOptions !== undefined) {
      // The same reason as a job of a BullMQ Worker's queue; it goes to the DLQ as a raw entry (unreadable-jobs.ts).
      const reason = unreadableReason({ data: raw, opts: unreadableOptions }) ?? 'job options are not JSON';
      out.invalid.push({ id, attemptsMade, reason, final: true });
      continue;
    }
    if (name !== def.name) {
      out.invalid.push({ id, attemptsMade, reason: `unknown job: queue ${queue} is batch job ${def.name}'s alone`, final: true });
      continue;
    }
    try {
      out.items.push({ jobId: id, data: validatePayload(def, data), attempt: attemptsMade + 1 });
    } catch (err) {
      const why = err instanceof PayloadValidationError ? describeIssues(err.issues) : (err as Error).message;
      out.invalid.push({ id, attemptsMade, reason: `invalid payload: ${why}`, final: true });
    }
  }
  return out;
}

const UNREADABLE = Symbol('unreadable');

function parsedOr<T>(raw: string, fallback: T): unknown {
  try {
    return JSON.parse(raw) as unknown;
  } catch {
    return fallback;
  }
}
