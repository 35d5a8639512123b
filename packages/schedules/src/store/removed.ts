import type { RedisClient } from '@tickwork/core';
import { pipelineBySlot, type SlotCommand } from '@tickwork/core';
import { REMOVED_SCHEDULE_STATE_TTL_MS } from '../keys.js';
import type { RemovedScheduleView } from './api.js';
import { parseDef, viewOf, type StoredDef } from './definition.js';
import { historyKeysOf, shardBase, shardOf } from './shard-keys.js';

/**
 * A removed schedule's history stays readable for REMOVED_SCHEDULE_STATE_TTL_MS. Beside it, under the same
 * hash tag and with the same expiry, the store keeps what the history alone cannot say: when the schedule
 * was removed and the definition it had (its job, rule, policies), so its page can show what ran.
 */
export function removedKey(prefix: string, id: string): string {
  return `${shardBase(prefix, shardOf(id))}:h:${id}:removed`;
}

/** The command that records a removal (the definition as stored, `raw`), expiring with the history. */
export function recordRemovalCommand(prefix: string, id: string, raw: string, now: number): SlotCommand {
  return ['set', removedKey(prefix, id), JSON.stringify({ at: now, def: raw }), 'PX', REMOVED_SCHEDULE_STATE_TTL_MS];
}

function parseRecord(raw: string | null): { at: number; def: StoredDef | null } | undefined {
  if (!raw) return undefined;
  try {
    const r = JSON.parse(raw) as { at?: unknown; def?: unknown };
    if (typeof r.at !== 'number') return undefined;
    return { at: r.at, def: typeof r.def === 'string' ? parseDef(r.def) : null };
  } catch {
    return undefined;
  }
}

/**
 * A schedule that is no longer defined but whose history is still kept (expiring): with its removal record
 * when the store wrote one, else (a catalog schedule that left the catalog, or one removed before records
 * were kept) with its history's expiry only. Null when nothing of it is left or it is defined (call `get`).
 */
export async function readRemoved(redis: RedisClient, prefix: string, id: string, queueOf: (def: StoredDef) => string, now = Date.now()): Promise<RemovedScheduleView | null> {
  const h = historyKeysOf(prefix, id);
  const key = removedKey(prefix, id);
  const reads: SlotCommand[] = [['get', key], ['pttl', key], ...[h.history, h.records, h.lastSuccess, h.lastFailure].map((k): SlotCommand => ['pttl', k])];
  const replies = (await pipelineBySlot(redis, reads)).map(([err, v]) => (err ? null : v));
  const record = parseRecord(replies[0] as string | null);
  // A TTL means "removed, expiring"; -1 (kept for good) means defined again; -2 means gone.
  const ttls = replies.slice(1).map((v) => Number(v ?? -2));
  const expiring = ttls.filter((t) => t > 0);
  if (!record && expiring.length === 0) return null;
  if (ttls.slice(1).some((t) => t === -1)) return null; // its history is kept for good: it is defined again
  return {
    id,
    removedAt: record ? new Date(record.at).toISOString() : null,
    expiresAt: expiring.length > 0 ? new Date(now + Math.max(...expiring)).toISOString() : null,
    definition: record?.def ? viewOf(id, record.def, queueOf(record.def), null) : null,
  };
}
