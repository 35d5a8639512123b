import { TickworkError } from '@tickwork/core';
import { dlqName, type QueueSet } from '@tickwork/core';
import { dlqItemFromHash, dlqItemArrivedAt, dlqItemJobName, parseDlqData, type DlqJobHash, type ParsedDlqData } from './item.js';
import type { DlqItem } from './entry.js';

/**
 * Where a DLQ keeps its entries. Nothing processes a DLQ, so entries stay in the places of jobs not yet
 * started: the wait list (every entry tickwork writes) and, for jobs something else added with a priority
 * or a delay, the prioritized and delayed sets. Read in this order, each from its oldest end.
 */
const SEGMENTS = ['wait', 'prioritized', 'delayed'] as const;

/** Most entries one page returns. */
export const DLQ_PAGE_MAX = 500;
/** Most entries one filtered request examines: a filter narrows a window, it never scans a whole DLQ. */
export const DLQ_SCAN_WINDOW = 2_000;

/** What a listing keeps; every field optional, all given must match. */
export interface DlqFilter {
  /** Exact job name. */
  name?: string;
  /** Substring of the failure reason (of the problem, for a foreign job), case-insensitive. */
  reason?: string;
  /** Dead-lettered at or after (foreign jobs: added). */
  since?: Date;
  /** Dead-lettered before. */
  until?: Date;
}

/** A listing parameter that does not parse; the message names it and what it accepts. */
export class DlqQueryError extends TickworkError {
  override name = 'DlqQueryError';
}

/** A cursor that does not decode, or names a place that cannot exist. */
export class InvalidDlqCursorError extends DlqQueryError {
  override name = 'InvalidDlqCursorError';
  constructor(detail: string) {
    super(`invalid cursor (${detail}); use the "next" value of the previous page as it was given`);
  }
}

/** Position after the last entry examined: its queue, segment, index from the oldest end, and its id. */
interface Position {
  q: string;
  s: number;
  o: number;
  a?: string;
}

const MAX_SEGMENT_SIZE = 2 ** 32;

function encodeCursor(p: Position): string {
  return Buffer.from(JSON.stringify(p)).toString('base64url');
}

function decodeCursor(cursor: string): Position {
  let p: unknown;
  try {
    p = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'));
  } catch {
    throw new InvalidDlqCursorError('not a cursor');
  }
  const { q, s, o, a } = (typeof p === 'object' && p !== null ? p : {}) as Record<string, unknown>;
  const ok = typeof q === 'string' && Number.isInteger(s) && Number.isInteger(o) && (a === undefined || typeof a === 'string');
  if (!ok || (s as number) < 0 || (s as number) >= SEGMENTS.length || (o as number) < 0) throw new InvalidDlqCursorError('not a cursor');
  // No Redis list or sorted set holds more than 2^32 entries; a larger offset would reach Redis as a range it refuses.
  if ((o as number) > MAX_SEGMENT_SIZE) throw new InvalidDlqCursorError('its offset is beyond any dead-letter queue');
  return { q, s: s as number, o: o as number, ...(a !== undefined && { a }) };
}

export interface DlqPage {
  /** Each entry with its origin queue. */
  items: { queue: string; item: DlqItem }[];
  /** Pass as `cursor` for the next page; null when every entry of the queues was examined. */
  next: string | null;
  /** Entries examined for this page (more than returned when a filter skipped some). */
  scanned: number;
  /** True when the page stopped at the scan window before filling up: more matches may follow `next`. */
  windowFull: boolean;
}

function matches(item: DlqItem, f: DlqFilter): boolean {
  if (f.name !== undefined && dlqItemJobName(item) !== f.name) return false;
  if (f.reason !== undefined) {
    const reason = item.entry ? item.entry.failureReason : item.foreign.problem;
    if (!reason.toLowerCase().includes(f.reason.toLowerCase())) return false;
  }
  const at = Date.parse(dlqItemArrivedAt(item));
  if (f.since !== undefined && !(at >= f.since.getTime())) return false;
  if (f.until !== undefined && !(at < f.until.getTime())) return false;
  return true;
}

/**
 * A cheap first look at a stored entry: false when its plain JSON already shows it cannot match, so a
 * filtered scan validates (zod) only the few entries that might. Anything not shaped like tickwork's entry
 * goes on to the full check.
 */
function mightMatch(data: ParsedDlqData, f: DlqFilter): boolean {
  if (!('value' in data) || typeof data.value !== 'object' || data.value === null) return true;
  const e = data.value as Record<string, unknown>;
  if (e.v !== 1 || typeof e.jobName !== 'string' || typeof e.failureReason !== 'string' || typeof e.deadLetteredAt !== 'string') return true;
  if (f.name !== undefined && e.jobName !== f.name) return false;
  if (f.reason !== undefined && !e.failureReason.toLowerCase().includes(f.reason.toLowerCase())) return false;
  const at = Date.parse(e.deadLetteredAt);
  return !((f.since !== undefined && at < f.since.getTime()) || (f.until !== undefined && at >= f.until.getTime()));
}

const isFiltered = (f: DlqFilter) => Object.values(f).some((v) => v !== undefined);

/**
 * One page of the DLQs of `queues` (origin queue names, in the order to walk them), oldest entry first
 * within each. Reads only the page's ids and hashes: never a whole DLQ, whatever its size. With a filter it
 * examines at most `scanWindow` entries and says where it stopped, so a rare match costs several requests
 * rather than one unbounded one.
 *
 * The cursor names the last entry examined; entries removed before it while paging (re-driven, purged) are
 * noticed and the page continues right after that entry, so nothing is shown twice.
 */
export async function readDlqPage(opts: {
  queues: QueueSet;
  queueNames: readonly string[];
  limit: number;
  cursor?: string;
  filter?: DlqFilter;
  scanWindow?: number;
}): Promise<DlqPage> {
  const filter = opts.filter ?? {};
  const window = isFiltered(filter) ? (opts.scanWindow ?? DLQ_SCAN_WINDOW) : opts.limit;
  const names = [...opts.queueNames];
  let pos: Position | undefined = opts.cursor ? decodeCursor(opts.cursor) : names[0] !== undefined ? { q: names[0], s: 0, o: 0 } : undefined;
  if (pos && !names.includes(pos.q)) throw new InvalidDlqCursorError(`queue "${pos.q}" is not listed here`);
  const items: DlqPage['items'] = [];
  let scanned = 0;
  while (pos && items.length < opts.limit && scanned < window) {
    const want = Math.min(window - scanned, isFiltered(filter) ? 500 : opts.limit - items.length);
    const chunk = await readChunk(opts.queues, pos, want);
    if (chunk.length === 0) {
      pos = advance(names, pos);
      continue;
    }
    for (const { id, hash } of chunk) {
      scanned += 1;
      pos = { q: pos.q, s: pos.s, o: pos.o + 1, a: id };
      if (!hash) continue;
      const data = parseDlqData(hash.data);
      if (!mightMatch(data, filter)) continue;
      const item = dlqItemFromHash(dlqName(pos.q), id, hash, data);
      if (matches(item, filter)) items.push({ queue: pos.q, item });
      if (items.length >= opts.limit || scanned >= window) break;
    }
  }
  // A position at the end of a segment may still have entries after it later; an exhausted walk has none.
  if (pos && (await readChunk(opts.queues, pos, 1)).length === 0) {
    let p: Position | undefined = advance(names, pos);
    while (p && (await segmentSize(opts.queues, p)) === 0) p = advance(names, p);
    pos = p;
  }
  return { items, next: pos ? encodeCursor(pos) : null, scanned, windowFull: pos !== undefined && items.length < opts.limit };
}

function advance(names: readonly string[], p: Position): Position | undefined {
  if (p.s + 1 < SEGMENTS.length) return { q: p.q, s: p.s + 1, o: 0 };
  const q = names[names.indexOf(p.q) + 1];
  return q === undefined ? undefined : { q, s: 0, o: 0 };
}

async function segmentSize(queues: QueueSet, p: Position): Promise<number> {
  const queue = queues.get(dlqName(p.q));
  const client = queues.redis;
  const key = queue.toKey(SEGMENTS[p.s] ?? 'wait');
  return p.s === 0 ? client.llen(key) : client.zcard(key);
}

/**
 * The `n` oldest entries of one queue's DLQ after skipping the `skip` oldest (what a batch works on), and
 * how many ids among them had no job hash left.
 */
export async function readOldestDlqItems(queues: QueueSet, queue: string, skip: number, n: number): Promise<{ items: DlqItem[]; vanished: number }> {
  const items: DlqItem[] = [];
  let vanished = 0;
  let rest = skip;
  for (let s = 0; s < SEGMENTS.length && items.length + vanished < n; s++) {
    const size = await segmentSize(queues, { q: queue, s, o: 0 });
    if (rest >= size) {
      rest -= size;
      continue;
    }
    for (const { id, hash } of await readChunk(queues, { q: queue, s, o: rest }, n - items.length - vanished)) {
      if (hash) items.push(dlqItemFromHash(dlqName(queue), id, hash));
      else vanished += 1;
    }
    rest = 0;
  }
  return { items, vanished };
}

/**
 * Up to `n` entries after position `p`, oldest first, each with its hash's fields (undefined when it is gone:
 * removed between the two reads). Moves `p.o` back when entries before it were removed since the cursor
 * was made (found by the id it names).
 */
async function readChunk(queues: QueueSet, p: Position, n: number): Promise<{ id: string; hash: DlqJobHash | undefined }[]> {
  const queue = queues.get(dlqName(p.q));
  const client = queues.redis;
  const key = queue.toKey(SEGMENTS[p.s] ?? 'wait');
  const isList = p.s === 0;
  // The wait list grows at its head (LPUSH), so its oldest end is the tail: index i from the oldest end
  // is -(i+1). The sorted sets are read by rank, lowest (oldest) first.
  const range = async (from: number, count: number): Promise<string[]> =>
    isList ? (await client.lrange(key, -(from + count), -(from + 1))).reverse() : client.zrange(key, String(from), String(from + count - 1));
  let ids: string[];
  if (p.o > 0 && p.a !== undefined) {
    const around = await range(p.o - 1, n + 1);
    if (around[0] === p.a) ids = around.slice(1);
    else {
      const at = await indexFromOldest(client, key, isList, p.a);
      // The entry the cursor names is gone too: continue from the same index (at worst skipping as many
      // entries as were removed before it).
      p.o = at === undefined ? p.o : at + 1;
      ids = await range(p.o, n);
    }
  } else ids = await range(p.o, n);
  if (ids.length === 0) return [];
  const pipeline = client.pipeline();
  for (const id of ids) pipeline.hmget(queue.toKey(id), 'name', 'data', 'timestamp');
  const hashes = (await pipeline.exec()) ?? [];
  return ids.map((id, i) => {
    const [err, fields] = hashes[i] ?? [null, null];
    if (err) throw err;
    const [name = null, data = null, timestamp = null] = (fields ?? []) as (string | null)[];
    return { id, hash: data === null && name === null ? undefined : { name, data, timestamp } };
  });
}

type Client = QueueSet['redis'];

async function indexFromOldest(client: Client, key: string, isList: boolean, id: string): Promise<number | undefined> {
  if (!isList) {
    const rank = await client.zrank(key, id);
    return rank ?? undefined;
  }
  // LPOS from the tail (RANK -1) finds it scanning from the oldest end; the index it returns counts from the head.
  const [at, len] = await Promise.all([client.lpos(key, id, 'RANK', '-1'), client.llen(key)]);
  return at === null ? undefined : len - 1 - at;
}
