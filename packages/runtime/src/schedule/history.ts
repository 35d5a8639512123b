import type { Redis } from 'ioredis';
import type { AnyJob } from '../define-job.js';
import type { Logger } from '../logger.js';
import type { Delivery } from '../run-identity.js';
import { occurrenceKey, scheduleKeys } from './keys.js';

/** Occurrences kept per schedule; last success and last failure are kept apart and never trimmed. */
export const HISTORY_CAP = 500;
/** How long a run keeps retrying a history write that failed (Redis unreachable) before giving up on it. */
export const HISTORY_RETRY_MS = 30_000;

/**
 * - `completed` / `failed`: an on-time run finished (failed = its final attempt failed);
 * - `caught-up`: a catch-up run completed; `manual`: an on-demand run of a scheduled job completed;
 * - `missed`: never run, by the missed-run policy; `skipped-overlap`: not run because a previous run was active;
 * - `cancelled`: an operator cancelled the run (running or before it started).
 * An occurrence without an outcome is scheduled or running.
 */
export type OccurrenceOutcome = 'completed' | 'failed' | 'skipped-overlap' | 'missed' | 'caught-up' | 'manual' | 'cancelled';
export type OccurrenceTrigger = 'schedule' | 'catch-up' | 'manual';

export interface OccurrenceRecord {
  /** `<schedule>@<nominal ISO>`, or `<schedule>@manual-<job id>`. */
  id: string;
  schedule: string;
  /** ISO UTC; for manual runs, when it was enqueued. */
  nominal: string;
  trigger: OccurrenceTrigger;
  jobId?: string;
  /** When the scheduler decided about the occurrence (claimed it). */
  claimedAt?: string;
  enqueuedAt?: string;
  startedAt?: string;
  endedAt?: string;
  attempts?: number;
  outcome?: OccurrenceOutcome;
  error?: string;
}

// Trims the zset to the cap, deleting the evicted records from the hash with it.
const TRIM = `
local excess = redis.call('ZCARD', KEYS[1]) - tonumber(ARGV[1])
if excess > 0 then
  local old = redis.call('ZRANGE', KEYS[1], 0, excess - 1)
  redis.call('ZREMRANGEBYRANK', KEYS[1], 0, excess - 1)
  for _, id in ipairs(old) do redis.call('HDEL', KEYS[2], id) end
end`;

/**
 * Atomic claim: only the caller whose `expected` cursor is still current moves it and creates the records,
 * so with N scheduler replicas exactly one decides about each occurrence.
 * KEYS: history, records, cursor. ARGV: cap, expected ('' = unset), new cursor, then (id, score, json)*.
 */
const CLAIM = `
local cur = redis.call('GET', KEYS[3]) or ''
if cur ~= ARGV[2] then return 0 end
redis.call('SET', KEYS[3], ARGV[3])
for i = 4, #ARGV, 3 do
  if redis.call('HSETNX', KEYS[2], ARGV[i], ARGV[i + 2]) == 1 then
    redis.call('ZADD', KEYS[1], ARGV[i + 1], ARGV[i])
  end
end
${TRIM}
return 1`;

/**
 * Merges fields into a record (creating it if absent) and optionally copies the result to a "last" key.
 * KEYS: history, records, [last]. ARGV: cap, id, score, patch json, defaults json (set only when missing).
 */
const MERGE = `
local cur = redis.call('HGET', KEYS[2], ARGV[2])
local rec = {}
if cur then rec = cjson.decode(cur) end
for k, v in pairs(cjson.decode(ARGV[4])) do rec[k] = v end
for k, v in pairs(cjson.decode(ARGV[5])) do if rec[k] == nil then rec[k] = v end end
local json = cjson.encode(rec)
redis.call('HSET', KEYS[2], ARGV[2], json)
redis.call('ZADD', KEYS[1], ARGV[3], ARGV[2])
if KEYS[3] then redis.call('SET', KEYS[3], json) end
${TRIM}
return json`;

export interface ClaimRequest {
  /** The cursor value read before planning (`null` when unset); the claim fails if it moved since. */
  expectedCursor: string | null;
  newCursor: number;
  records: OccurrenceRecord[];
}

/** Returns false when another replica claimed first (nothing was written). */
export async function claimOccurrences(redis: Redis, prefix: string, schedule: string, req: ClaimRequest): Promise<boolean> {
  const k = scheduleKeys(prefix, schedule);
  const args: (string | number)[] = [HISTORY_CAP, req.expectedCursor ?? '', String(req.newCursor)];
  for (const r of req.records) args.push(r.id, Date.parse(r.nominal), JSON.stringify(r));
  return (await redis.eval(CLAIM, 3, k.history, k.records, k.cursor, ...args)) === 1;
}

/** Merges `patch` into the record `id` (creating it with `defaults`); returns the merged record. */
export async function mergeOccurrence(
  redis: Redis,
  prefix: string,
  schedule: string,
  id: string,
  nominalMs: number,
  patch: Partial<OccurrenceRecord>,
  defaults: Partial<OccurrenceRecord> = {},
  copyTo?: 'lastSuccess' | 'lastFailure',
): Promise<OccurrenceRecord> {
  const k = scheduleKeys(prefix, schedule);
  const keys = copyTo ? [k.history, k.records, k[copyTo]] : [k.history, k.records];
  const json = await redis.eval(
    MERGE,
    keys.length,
    ...keys,
    HISTORY_CAP,
    id,
    nominalMs,
    JSON.stringify(patch),
    JSON.stringify(defaults),
  );
  return JSON.parse(String(json)) as OccurrenceRecord;
}

/** Newest first. */
export async function readHistory(redis: Redis, prefix: string, schedule: string, limit = 50): Promise<OccurrenceRecord[]> {
  const k = scheduleKeys(prefix, schedule);
  const ids = await redis.zrevrange(k.history, 0, limit - 1);
  if (ids.length === 0) return [];
  const raw = await redis.hmget(k.records, ...ids);
  return raw.flatMap((r) => (r ? [JSON.parse(r) as OccurrenceRecord] : []));
}

export async function lastOutcomes(
  redis: Redis,
  prefix: string,
  schedule: string,
): Promise<{ lastSuccess: OccurrenceRecord | null; lastFailure: OccurrenceRecord | null }> {
  const k = scheduleKeys(prefix, schedule);
  const [s, f] = await redis.mget(k.lastSuccess, k.lastFailure);
  return { lastSuccess: s ? (JSON.parse(s) as OccurrenceRecord) : null, lastFailure: f ? (JSON.parse(f) as OccurrenceRecord) : null };
}

/** The worker side: what a run of a scheduled job records. Never throws (history must not fail a job). */
export interface RunRecorder {
  started(attempt: number): Promise<void>;
  succeeded(): Promise<void>;
  /** `final`: no retry follows, so the occurrence's outcome is `failed`. */
  failed(err: unknown, final: boolean): Promise<void>;
  /** For the overlap policy: this occurrence is not run because an earlier run is still active. */
  skippedOverlap(reason?: string): Promise<void>;
  /** For the missed-run policy at the worker: this late occurrence is not run. */
  missed(reason: string): Promise<void>;
  /** This occurrence started late and runs as a catch-up: its trigger becomes `catch-up`, success `caught-up`. */
  catchingUp(): Promise<void>;
  /** An operator cancelled the run; `reason` is the failed reason (`cancelled by ...`). */
  cancelled(reason: string): Promise<void>;
}

/** A recorder for runs of scheduled jobs (on time, catch-up or manual); undefined for unscheduled jobs. */
export function runRecorder(
  redis: Redis,
  prefix: string,
  job: AnyJob,
  delivery: Delivery,
  log: Logger,
): RunRecorder | undefined {
  if (!job.schedule && !delivery.scheduled) return undefined;
  const schedule = delivery.scheduled?.schedule ?? job.name;
  const nominalMs = delivery.scheduled?.nominal ?? Date.now();
  const trigger: OccurrenceTrigger = delivery.scheduled ? (delivery.scheduled.catchUp ? 'catch-up' : 'schedule') : 'manual';
  const id = delivery.scheduled ? occurrenceKey(schedule, new Date(nominalMs)) : `${schedule}@manual-${delivery.id}`;
  const defaults: Partial<OccurrenceRecord> = { id, schedule, nominal: new Date(nominalMs).toISOString(), trigger, jobId: delivery.id };
  // A Redis blip must not leave an occurrence `started` forever while its run completes: the write is
  // retried (merging is idempotent) until Redis is back or HISTORY_RETRY_MS has passed. The job cannot be
  // acknowledged while Redis is down anyway, so waiting here holds nothing up that could proceed.
  const merge = async (patch: Partial<OccurrenceRecord>, copyTo?: 'lastSuccess' | 'lastFailure') => {
    const deadline = Date.now() + HISTORY_RETRY_MS;
    for (let delay = 100; ; delay = Math.min(delay * 2, 2000)) {
      try {
        await mergeOccurrence(redis, prefix, schedule, id, nominalMs, patch, defaults, copyTo);
        return;
      } catch (err) {
        if (Date.now() + delay > deadline) {
          log.warn({ err: { message: (err as Error).message }, occurrence: id }, 'could not record schedule history');
          return;
        }
        await new Promise((resolve) => setTimeout(resolve, delay));
      }
    }
  };
  const now = () => new Date().toISOString();
  let successOutcome: OccurrenceOutcome = trigger === 'catch-up' ? 'caught-up' : trigger === 'manual' ? 'manual' : 'completed';
  return {
    started: (attempt) => merge({ startedAt: now(), attempts: attempt }),
    succeeded: () => merge({ endedAt: now(), outcome: successOutcome }, 'lastSuccess'),
    failed: (err, final) =>
      final
        ? merge({ endedAt: now(), outcome: 'failed', error: (err as Error)?.message ?? String(err) }, 'lastFailure')
        : merge({ error: (err as Error)?.message ?? String(err) }),
    skippedOverlap: (reason) => merge({ endedAt: now(), outcome: 'skipped-overlap', ...(reason && { error: reason }) }),
    missed: (reason) => merge({ endedAt: now(), outcome: 'missed', error: reason }),
    cancelled: (reason) => merge({ endedAt: now(), outcome: 'cancelled', error: reason }),
    catchingUp: () => {
      successOutcome = 'caught-up';
      return merge({ trigger: 'catch-up' });
    },
  };
}
