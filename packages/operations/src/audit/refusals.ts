import type { RedisClient } from '@tickwork/core';
import { auditFields, readAuditStream, type AuditAction, type AuditPage } from './audit-log.js';

/**
 * Requests the dashboard refused (a viewer's change, a request another site's page sent with an admin's
 * login, a body over its limit) are kept apart from the actions, so no number of them can shorten the
 * audit log: the latest REFUSALS_KEPT in a capped stream, and how many per minute for REFUSAL_COUNT_DAYS.
 */

/** Refused requests kept one by one (`MAXLEN ~`: up to about a tenth more). */
export const REFUSALS_KEPT = 1000;
/** Days the per-minute counts are kept. */
export const REFUSAL_COUNT_DAYS = 7;

export const refusalsKey = (prefix: string): string => `${prefix}:meta:audit-refused`;
/** One hash per UTC day: `HH:MM` -> requests refused in that minute. */
export const refusalCountsKey = (prefix: string, day: string): string => `${prefix}:meta:audit-refused:${day}`;

/** The statuses of a refused request: no login, forbidden (role, origin, form token), body too large, throttled. */
export function isRefusal(status: number): boolean {
  return status === 401 || status === 403 || status === 413 || status === 429;
}

/** Records one refused request: in the capped stream, and in its minute's count. */
export async function recordRefusal(redis: RedisClient, prefix: string, request: AuditAction, now = new Date()): Promise<void> {
  const iso = now.toISOString();
  const counts = refusalCountsKey(prefix, iso.slice(0, 10));
  await Promise.all([
    redis.xadd(refusalsKey(prefix), 'MAXLEN', '~', REFUSALS_KEPT, '*', ...auditFields(request)),
    redis.hincrby(counts, iso.slice(11, 16), 1),
    // The day's hash lives REFUSAL_COUNT_DAYS past its last count (each write sets it again: one command).
    redis.pexpire(counts, (REFUSAL_COUNT_DAYS + 1) * 86_400_000),
  ]);
}

/** One page of the refused requests kept, newest first. */
export function readRefusals(redis: RedisClient, prefix: string, opts: { before?: string | undefined; limit: number }): Promise<AuditPage> {
  return readAuditStream(redis, refusalsKey(prefix), opts);
}

export interface RefusalCounts {
  /** Requests refused in the last `hours`. */
  total: number;
  /** The minutes with refusals among them, newest first. */
  minutes: { at: string; count: number }[];
}

/** How many requests were refused per minute in the last `hours` (at most 24 * REFUSAL_COUNT_DAYS). */
export async function refusalCounts(redis: RedisClient, prefix: string, opts: { now?: Date; hours?: number } = {}): Promise<RefusalCounts> {
  const now = opts.now ?? new Date();
  const hours = Math.min(Math.max(1, opts.hours ?? 24), 24 * REFUSAL_COUNT_DAYS);
  const from = now.getTime() - hours * 3_600_000;
  const days: string[] = [];
  for (let t = Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate()); t >= from - 86_400_000; t -= 86_400_000) days.push(new Date(t).toISOString().slice(0, 10));
  const hashes = await Promise.all(days.map((day) => redis.hgetall(refusalCountsKey(prefix, day))));
  const minutes: RefusalCounts['minutes'] = [];
  days.forEach((day, i) => {
    for (const [minute, count] of Object.entries(hashes[i] ?? {})) {
      const at = Date.parse(`${day}T${minute}:00.000Z`);
      if (Number.isFinite(at) && at > from - 60_000 && at <= now.getTime()) minutes.push({ at: new Date(at).toISOString(), count: Number(count) || 0 });
    }
  });
  minutes.sort((a, b) => b.at.localeCompare(a.at));
  return { total: minutes.reduce((sum, m) => sum + m.count, 0), minutes };
}
