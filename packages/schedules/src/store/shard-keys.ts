/**
 * Where the schedule store lives in Redis. Schedules are spread over SCHEDULE_SHARDS shards by a stable
 * hash of their id, and every key of a shard — its due index, definitions, claims, lex indexes and the
 * history of each of its schedules — carries the shard's hash tag `{sched:<k>}`. So one Lua script can
 * touch a shard's index and a schedule's records together, and on Redis Cluster each shard is one slot
 * (no key that every schedule touches); a call over all shards goes as one pipeline per slot
 * (redis/by-slot.ts). On a cluster QUEUE_PREFIX carries no tag (env.ts refuses one), so the shard tags hold.
 */

/** Recorded once per prefix (`<prefix>:meta:schedule-shards`): a scheduler refuses another value. */
export const SCHEDULE_SHARDS = 16;

export function scheduleShardsKey(prefix: string): string {
  return `${prefix}:meta:schedule-shards`;
}

/** FNV-1a (32 bit) over the id's UTF-16 code units: stable across processes and versions, cheap. */
export function shardOf(id: string, shards = SCHEDULE_SHARDS): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < id.length; i++) {
    h ^= id.charCodeAt(i);
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  return h % shards;
}

export function shardBase(prefix: string, shard: number): string {
  return `${prefix}:{sched:${shard}}`;
}

/** The keys of one shard. */
export function shardKeys(prefix: string, shard: number) {
  const base = shardBase(prefix, shard);
  return {
    /** ZSET id -> nominal ms of the next occurrence not yet dealt with. */
    due: `${base}:due`,
    /** HASH id -> definition (compact JSON core, newline, JSON meta: see definition.ts). */
    defs: `${base}:defs`,
    /** ZSET id -> lease deadline ms: claimed by a dispatcher, not yet committed. */
    claimed: `${base}:claimed`,
    /** HASH id -> `<claimed nominal>:<lease token>`. */
    inflight: `${base}:inflight`,
    /** ZSET (score 0) of every id: `list({ prefix })` by ZRANGEBYLEX. */
    ids: `${base}:ids`,
    /** Prefix of the per-job lex indexes (`<jobIdx><job name>`). */
    jobIdx: `${base}:job:`,
    /** ZSET id -> when the watchdog next judges a watched schedule's health. */
    watch: `${base}:watch`,
    /** ZSET id -> when it went stale (alerted; waiting for its recovery). */
    stale: `${base}:stale`,
    /** ZSET occurrence key -> when its run becomes slow (started runs of watched schedules). */
    running: `${base}:running`,
    /**
     * ZSET id -> the due score a claim ahead left it at, finding it too frequent to add ahead: claims ahead
     * skip it while its due entry keeps that score (dispatch/plan-claim.ts).
     */
    notAhead: `${base}:not-ahead`,
  };
}

export type ShardKeys = ReturnType<typeof shardKeys>;

export function jobIndexKey(prefix: string, shard: number, job: string): string {
  return `${shardKeys(prefix, shard).jobIdx}${job}`;
}

/** A schedule's history keys, under its shard's tag (so the worker's gate reads defs in the same script). */
export function historyKeysOf(prefix: string, id: string) {
  const base = `${shardBase(prefix, shardOf(id))}:h:${id}`;
  return {
    history: `${base}:history`,
    records: `${base}:records`,
    lastSuccess: `${base}:last-success`,
    lastFailure: `${base}:last-failure`,
  };
}

/**
 * A catalog schedule's timeline for the dashboard's charts (@tickwork/operations timeline/: fire lag, run
 * time and outcomes per hour, a fixed size), under its shard's tag beside its history. It expires on its own
 * a month after its last write, so it is not among historyKeysOf's keys.
 */
export function timelineKeyOf(prefix: string, id: string): string {
  return `${shardBase(prefix, shardOf(id))}:h:${id}:timeline`;
}

/**
 * A schedule id as it may appear in a BullMQ job id: BullMQ forbids ':' in custom ids, so ':' becomes
 * `%3A` and '%' `%25` (reversible, so `a:b` and `ab` never collide). Catalog ids (job names) contain
 * neither and are unchanged.
 */
export function encodeScheduleId(id: string): string {
  return id.replaceAll('%', '%25').replaceAll(':', '%3A');
}

export function decodeScheduleId(encoded: string): string {
  return encoded.replaceAll('%3A', ':').replaceAll('%25', '%');
}
