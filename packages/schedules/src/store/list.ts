import type { RedisClient } from '@tickwork/core';
import { pipelineBySlot, readBySlot, type SlotCommand } from '@tickwork/core';
import type { ListPage, ListQuery, ScheduleSource, ScheduleView } from './api.js';
import { parseDef, sourceOf, viewOf, type StoredDef } from './definition.js';
import { jobIndexKey, SCHEDULE_SHARDS, shardKeys, shardOf } from './shard-keys.js';

export const DEFAULT_LIST_LIMIT = 50;
export const MAX_LIST_LIMIT = 500;

const HIGHEST = Buffer.from([0xff]); // no UTF-8 string contains the byte 0xff: the end of a prefix range

function indexKey(prefix: string, shard: number, job: string | undefined): string {
  return job === undefined ? shardKeys(prefix, shard).ids : jobIndexKey(prefix, shard, job);
}

/**
 * Ids in byte order, as ZRANGEBYLEX orders members (JS string order differs beyond the BMP). Each id is
 * encoded once, not at every comparison: a page's merge sorts up to 16 x (limit + 1) ids.
 */
function sortBytewise(ids: string[]): string[] {
  return ids
    .map((id) => ({ id, bytes: Buffer.from(id) }))
    .sort((a, b) => Buffer.compare(a.bytes, b.bytes))
    .map((e) => e.id);
}

/**
 * One page of schedules ordered by id: each shard's lex index is read from just after the cursor (at most
 * limit + 1 ids each), the 16 runs are merged and the first `limit` kept; the rest are read again next page.
 * Memory is 16 x limit ids whatever the number of schedules. A `source` filter drops the other source's
 * entries from the merged run and reads on until the page is full.
 */
export async function listSchedules(redis: RedisClient, prefix: string, queueOf: (def: StoredDef) => string, query: ListQuery = {}): Promise<ListPage> {
  const limit = Math.min(Math.max(1, Math.floor(query.limit ?? DEFAULT_LIST_LIMIT)), MAX_LIST_LIMIT);
  const max = query.prefix ? Buffer.concat([Buffer.from(`[${query.prefix}`), HIGHEST]) : '+';
  let after = query.cursor ?? null;
  const items: ScheduleView[] = [];
  for (;;) {
    const min = after !== null ? `(${after}` : query.prefix ? `[${query.prefix}` : '-';
    const reads: SlotCommand[] = [];
    for (let s = 0; s < SCHEDULE_SHARDS; s++) reads.push(['zrangebylex', indexKey(prefix, s, query.job), min, max, 'LIMIT', 0, limit + 1]);
    const runs = (await readBySlot(redis, reads)) as string[][];
    const merged = sortBytewise(runs.flat());
    const page = merged.slice(0, limit - items.length);
    const more = merged.length > page.length;
    const views = await loadViews(redis, prefix, page, queueOf);
    for (const v of views) if (!query.source || v.source === query.source) items.push(v);
    const last = page.at(-1);
    if (!more || last === undefined) return { items, cursor: null };
    if (items.length >= limit) return { items, cursor: last };
    after = last;
  }
}

async function loadViews(redis: RedisClient, prefix: string, ids: readonly string[], queueOf: (def: StoredDef) => string): Promise<ScheduleView[]> {
  if (ids.length === 0) return [];
  const reads: SlotCommand[] = [];
  for (const id of ids) {
    const sk = shardKeys(prefix, shardOf(id));
    reads.push(['hget', sk.defs, id], ['zscore', sk.due, id], ['hget', sk.inflight, id]);
  }
  const replies = await pipelineBySlot(redis, reads);
  const now = Date.now();
  const views: ScheduleView[] = [];
  ids.forEach((id, i) => {
    const raw = replies[3 * i]?.[1] as string | null;
    if (!raw) return; // removed between the index read and this one
    const due = replies[3 * i + 1]?.[1] as string | null;
    const inflight = replies[3 * i + 2]?.[1] as string | null;
    const def = parseDef(raw);
    const next = due !== null ? Number(due) : inflight ? Number(inflight.split(':')[0]) : null;
    views.push(viewOf(id, def, queueOf(def), next, now));
  });
  return views;
}

/**
 * How many schedules match, from the indexes' sizes (16 ZCARDs), never by loading them. Catalog schedules
 * are few and known by name: `source` subtracts or keeps those present in the store.
 */
export async function countSchedules(redis: RedisClient, prefix: string, catalogIds: readonly string[], query: { job?: string; source?: ScheduleSource } = {}): Promise<number> {
  const cards: SlotCommand[] = [];
  for (let s = 0; s < SCHEDULE_SHARDS; s++) cards.push(['zcard', indexKey(prefix, s, query.job)]);
  const total = (await pipelineBySlot(redis, cards)).reduce((sum, [, n]) => sum + Number(n ?? 0), 0);
  if (!query.source) return total;
  const candidates = query.job === undefined ? catalogIds : catalogIds.filter((id) => id === query.job);
  let catalogCount = 0;
  if (candidates.length > 0) {
    const check = candidates.map((id): SlotCommand => ['hget', shardKeys(prefix, shardOf(id)).defs, id]);
    for (const [, raw] of await pipelineBySlot(redis, check)) if (typeof raw === 'string' && sourceOf(parseDef(raw).core) === 'catalog') catalogCount++;
  }
  return query.source === 'catalog' ? catalogCount : total - catalogCount;
}
