import { Job } from 'bullmq';
import { dateFromMs } from '@tickwork/core';
import { deadLetterJobId } from './ids.js';
import type { DeadLetterEntry } from './entry.js';

/**
 * A DLQ entry built from a failed job's raw Redis hash, for a job tickwork cannot read normally (its data
 * or options do not parse, or describing it threw). Every field is read defensively and kept as stored
 * when it does not parse, so the job still leaves the failed set (where `removeOnFail` would delete it)
 * and an operator can see, fix and re-drive it. `unparsedReason` says what went wrong.
 */
export function rawDeadLetterEntry(opts: {
  queue: string;
  jobId: string;
  hash: Record<string, string>;
  firstFailedOn: number | undefined;
  reason: string;
  now: Date;
}): DeadLetterEntry {
  const { hash, jobId, now } = opts;
  const name = hash.name || '(unnamed)';
  const timestamp = finiteNumber(hash.timestamp) ?? 0;
  const lastFailedAt = dateFromMs(finiteNumber(hash.finishedOn)) ?? now;
  return {
    v: 1,
    originQueue: opts.queue,
    jobName: name,
    payload: parseOr(hash.data, (s) => JSON.parse(s) as unknown),
    originalJobId: jobId,
    originalTimestamp: timestamp,
    originalOptions: optionsOf(hash.opts),
    idempotencyKey: `${name}#${jobId}`,
    failureReason: hash.failedReason || '(no reason recorded)',
    unparsedReason: opts.reason,
    stack: lastStack(hash.stacktrace),
    attemptsMade: finiteNumber(hash.atm ?? hash.attemptsMade) ?? 0,
    firstFailedAt: (dateFromMs(opts.firstFailedOn) ?? lastFailedAt).toISOString(),
    lastFailedAt: lastFailedAt.toISOString(),
    deadLetteredAt: now.toISOString(),
    nominalTime: null,
    scheduleId: null,
    redriveCount: 0,
    rootDlqJobId: deadLetterJobId({ id: jobId, timestamp }),
    history: [],
  };
}

function finiteNumber(raw: string | undefined): number | undefined {
  const n = raw === undefined || raw === '' ? NaN : Number(raw);
  return Number.isFinite(n) ? n : undefined;
}

/** The parsed value, or the stored string itself when it does not parse (nothing is dropped). */
function parseOr(raw: string | undefined, parse: (s: string) => unknown): unknown {
  if (raw === undefined) return null;
  try {
    return parse(raw);
  } catch {
    return raw;
  }
}

function optionsOf(raw: string | undefined): Record<string, unknown> {
  const opts = parseOr(raw, (s) => Job.optsFromJSON(s));
  if (typeof opts === 'object' && opts !== null && !Array.isArray(opts)) return opts as Record<string, unknown>;
  return opts === null ? {} : { unparsed: opts };
}

function lastStack(raw: string | undefined): string | null {
  const traces = parseOr(raw, (s) => JSON.parse(s) as unknown);
  if (Array.isArray(traces)) {
    const last: unknown = traces.at(-1);
    return typeof last === 'string' ? last : null;
  }
  return typeof traces === 'string' ? traces : null;
}
