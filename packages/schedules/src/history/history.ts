import type { RedisClient } from '@tickwork/core';
import { occurrenceKey, runScript } from '@tickwork/core';
import { historyKeysOf, shardKeys, shardOf } from '../store/shard-keys.js';
import { MERGE_RECORD } from '../store/lua.js';

/** Occurrences kept per catalog schedule; last success and last failure are kept apart and never trimmed. */
export const HISTORY_CAP = 500;
/**
 * - `completed` / `failed`: an on-time run finished (failed = its final attempt failed);
 * - `caught-up`: a catch-up run completed; `manual`: a run now of the schedule (or a re-drive of its run) completed;
 * - `missed`: never run, by the missed-run policy; `skipped-overlap`: not run because a previous run was active;
 * - `skipped-paused`: due while its schedule was paused; `skipped-removed` / `skipped-changed`: enqueued
 *   before its schedule was removed or changed, and not run;
 * - `cancelled`: an operator cancelled the run (running or before it started).
 * An occurrence without an outcome is scheduled or running.
 */
export type OccurrenceOutcome =
  | 'completed'
  | 'failed'
  | 'skipped-overlap'
  | 'missed'
  | 'caught-up'
  | 'manual'
  | 'skipped-paused'
  | 'skipped-removed'
  | 'skipped-changed'
  | 'cancelled';
export type OccurrenceTrigger = 'schedule' | 'catch-up' | 'manual';

export interface OccurrenceRecord {
  /** `<schedule>@<nominal ISO>`, or `<schedule>@manual-<token or job id>`. */
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
  /** Who asked for a manual run (runNow's `by`). */
  by?: string;
}

/**
 * Merges fields into a record (creating it with `defaults` if absent; a JSON null in `patch` deletes the
 * field) and optionally copies the result to last-success/last-failure. Trims to `cap`.
 */
export async function mergeOccurrence(
  redis: RedisClient,
  prefix: string,
  schedule: string,
  id: string,
  nominalMs: number,
  patch: Partial<OccurrenceRecord>,
  defaults: Partial<OccurrenceRecord> = {},
  copyTo?: 'lastSuccess' | 'lastFailure',
  opts: { cap?: number; running?: string } = {},
): Promise<OccurrenceRecord> {
  const place = placeOf(prefix, schedule, defaults, opts.running ? { key: shardKeys(prefix, shardOf(schedule)).running, member: opts.running } : undefined);
  const { keys, argv } = mergeCall(place, id, nominalMs, patch, copyTo, opts.cap);
  return JSON.parse(String(await runScript(redis, MERGE_RECORD, keys, argv))) as OccurrenceRecord;
}

/**
 * Where a schedule's records go, worked out once per run (a run writes two or three): its history keys, its
 * shard's slow-run index with the run's member there (watched runs only), and its record's defaults as JSON.
 */
export interface RecordPlace {
  keys: ReturnType<typeof historyKeysOf>;
  running?: { key: string; member: string };
  defaults: string;
}

export function placeOf(prefix: string, schedule: string, defaults: Partial<OccurrenceRecord>, running?: RecordPlace['running']): RecordPlace {
  const place: RecordPlace = { keys: historyKeysOf(prefix, schedule), defaults: JSON.stringify(defaults) };
  if (running) place.running = running;
  return place;
}

/**
 * MERGE_RECORD's keys and arguments. `leave`: the run's overlap slot and holder, freed in the same call;
 * `quiet`: the reply is whether it freed the slot (0 or 1) rather than the merged record.
 */
export function mergeCall(
  place: RecordPlace,
  id: string,
  nominalMs: number,
  patch: Partial<OccurrenceRecord>,
  copyTo: 'lastSuccess' | 'lastFailure' | undefined,
  cap = HISTORY_CAP,
  leave?: OverlapLeave,
  quiet = false,
): { keys: string[]; argv: (string | number)[] } {
  const k = place.keys;
  const keys = [k.history, k.records];
  if (copyTo) keys.push(k[copyTo]);
  if (place.running) keys.push(place.running.key);
  if (leave) keys.push(leave.slot);
  const argv = [cap, id, nominalMs, JSON.stringify(patch), place.defaults, copyTo ? '1' : '0', place.running?.member ?? '', leave?.holder ?? '', quiet ? '1' : '0'];
  return { keys, argv };
}

/** A run's overlap slot and the key it holds it under, freed by its end record (single Redis only: the slot has its own hash tag). */
export interface OverlapLeave {
  slot: string;
  holder: string;
}

/** Newest first. */
export async function readHistory(redis: RedisClient, prefix: string, schedule: string, limit = 50): Promise<OccurrenceRecord[]> {
  const k = historyKeysOf(prefix, schedule);
  const ids = await redis.zrevrange(k.history, 0, limit - 1);
  if (ids.length === 0) return [];
  const raw = await redis.hmget(k.records, ...ids);
  return raw.flatMap((r) => (r ? [JSON.parse(r) as OccurrenceRecord] : []));
}

/** One occurrence's record (`nominalMs`: its nominal time), or undefined while no scheduler has dealt with it. */
export async function readOccurrence(redis: RedisClient, prefix: string, schedule: string, nominalMs: number): Promise<OccurrenceRecord | undefined> {
  const raw = await redis.hget(historyKeysOf(prefix, schedule).records, occurrenceKey(schedule, new Date(nominalMs)));
  return raw === null ? undefined : (JSON.parse(raw) as OccurrenceRecord);
}

export async function lastOutcomes(
  redis: RedisClient,
  prefix: string,
  schedule: string,
): Promise<{ lastSuccess: OccurrenceRecord | null; lastFailure: OccurrenceRecord | null }> {
  const k = historyKeysOf(prefix, schedule);
  const [s, f] = await redis.mget(k.lastSuccess, k.lastFailure);
  return { lastSuccess: s ? (JSON.parse(s) as OccurrenceRecord) : null, lastFailure: f ? (JSON.parse(f) as OccurrenceRecord) : null };
}
