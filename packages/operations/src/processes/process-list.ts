import { PROCESS_MEMBER, workersKey, type RedisClient } from '@tickwork/core';
import { schedulersKey } from '@tickwork/schedules';
import { processIndexKey, processInfoKey, type ProcessRole } from './process-info.js';

/**
 * - `alive`: its registry has a beat younger than its dead-after time (or it started that recently);
 * - `gone`: silent for longer (killed, frozen, or cut off from Redis), or forgotten by its registry;
 * - `stopped`: it stopped cleanly (drained, deregistered).
 */
export type ProcessStatus = 'alive' | 'gone' | 'stopped';

export interface ProcessRow {
  role: ProcessRole;
  tag: string;
  host: string | null;
  pid: number | null;
  version: string | null;
  queues: string[];
  /** Jobs run at once per queue (workers). */
  concurrency: number | null;
  /** Jobs running at its last write (workers; batch queues' batches are not counted). */
  busy: number | null;
  started: string | null;
  status: ProcessStatus;
  /** Its last beat (from its registry), else its last record write; ISO. */
  lastSeen: string | null;
  /** How long ago that was, by the Redis clock. */
  silentMs: number | null;
}

export interface ProcessListing {
  /** The Redis time of the reading, ISO. */
  at: string;
  processes: ProcessRow[];
}

/** At most this many processes are listed (the most recently seen). */
export const PROCESS_LIST_MAX = 1000;

const int = (v: string | undefined): number | null => {
  const n = Number(v);
  return v !== undefined && v !== '' && Number.isSafeInteger(n) ? n : null;
};

function queuesOf(raw: string | undefined): string[] {
  try {
    const parsed = JSON.parse(raw ?? '[]') as unknown;
    return Array.isArray(parsed) ? parsed.filter((q): q is string => typeof q === 'string') : [];
  } catch {
    return [];
  }
}

const iso = (ms: number | null): string | null => (ms === null ? null : new Date(ms).toISOString());

/**
 * Every process seen within PROCESS_MEMORY_MS, workers first, then schedulers, each by start time. Reads the
 * index, each record and each process's registry score: a few commands per process, no scan.
 */
export async function listProcesses(redis: RedisClient, prefix: string): Promise<ProcessListing> {
  const [secs, micros] = await redis.time();
  const now = Number(secs) * 1000 + Math.floor(Number(micros) / 1000);
  const members = await redis.zrevrange(processIndexKey(prefix), 0, PROCESS_LIST_MAX - 1);
  const rows = await Promise.all(
    members.map(async (member): Promise<ProcessRow | undefined> => {
      const sep = member.indexOf(':');
      const role = member.slice(0, sep);
      const tag = member.slice(sep + 1);
      if (role !== 'worker' && role !== 'scheduler') return undefined;
      const [h, score] = await Promise.all([
        redis.hgetall(processInfoKey(prefix, role, tag)),
        role === 'worker' ? redis.zscore(workersKey(prefix), PROCESS_MEMBER + tag) : redis.zscore(schedulersKey(prefix), tag),
      ]);
      // Expired between the index read and this one (or the index outlived it): nothing left to show.
      if (Object.keys(h).length === 0) return undefined;
      const beat = score === null ? null : Number(score);
      const seenAt = int(h.seenAt);
      const deadAfterMs = int(h.deadAfterMs) ?? 5000;
      const startedMs = h.started ? Date.parse(h.started) : NaN;
      const lastSeen = beat ?? seenAt;
      return {
        role,
        tag,
        host: h.host ?? null,
        pid: int(h.pid),
        version: h.version ?? null,
        queues: queuesOf(h.queues),
        concurrency: int(h.concurrency),
        busy: int(h.busy),
        started: Number.isNaN(startedMs) ? null : new Date(startedMs).toISOString(),
        status: statusOf({ stopped: h.stopped !== undefined, beat, now, deadAfterMs, startedMs }),
        lastSeen: iso(lastSeen),
        silentMs: lastSeen === null ? null : Math.max(0, now - lastSeen),
      };
    }),
  );
  const order = (r: ProcessRow) => `${r.role === 'worker' ? 0 : 1}${r.started ?? ''}${r.tag}`;
  return {
    at: new Date(now).toISOString(),
    processes: rows.filter((r): r is ProcessRow => r !== undefined).sort((a, b) => order(a).localeCompare(order(b))),
  };
}

function statusOf(p: { stopped: boolean; beat: number | null; now: number; deadAfterMs: number; startedMs: number }): ProcessStatus {
  if (p.stopped) return 'stopped';
  // Its registry still has it: the beat decides, as it does for the other processes.
  if (p.beat !== null) return p.now - p.beat < p.deadAfterMs ? 'alive' : 'gone';
  // Not (yet) in its registry: just starting (before its first beat), else dropped as dead.
  return p.now - p.startedMs < p.deadAfterMs ? 'alive' : 'gone';
}
