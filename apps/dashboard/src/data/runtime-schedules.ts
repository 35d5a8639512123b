import { readHistory, type ListPage, type OccurrenceRecord, type RemovedScheduleView, type Schedules, type ScheduleView } from '@tickwork/schedules';
import { TickworkError, type RedisClient } from '@tickwork/core';
import { HISTORY_ROWS } from './schedules.js';

/** A listing parameter the dashboard cannot use (a 400 that names it). */
export class ScheduleQueryError extends TickworkError {
  override name = 'ScheduleQueryError';
}

export const DEFAULT_PAGE = 50;
export const MAX_PAGE = 500;

/** The runtime schedules listing as the page and `/api/runtime-schedules` take it from the query string. */
export interface RuntimeQuery {
  prefix?: string;
  job?: string;
  cursor?: string;
  limit: number;
}

/** From query-string values (each given once); empty fields mean "no filter", as an empty GET form sends them. */
export function parseRuntimeQuery(raw: Record<string, unknown>): RuntimeQuery {
  const text = (k: string): string | undefined => {
    const v = raw[k];
    if (v !== undefined && typeof v !== 'string') throw new ScheduleQueryError(`${k} must be given once`);
    return v === undefined || v.trim() === '' ? undefined : v;
  };
  const limitText = text('limit');
  const limit = limitText === undefined ? DEFAULT_PAGE : /^\d+$/.test(limitText.trim()) ? Number(limitText) : NaN;
  if (!Number.isInteger(limit) || limit < 1 || limit > MAX_PAGE) {
    throw new ScheduleQueryError(`limit must be an integer from 1 to ${MAX_PAGE}, got ${JSON.stringify(limitText)}`);
  }
  const prefix = text('prefix');
  const job = text('job');
  const cursor = text('cursor');
  return { limit, ...(prefix !== undefined && { prefix }), ...(job !== undefined && { job }), ...(cursor !== undefined && { cursor }) };
}

export interface RuntimePage extends ListPage {
  /** Runtime schedules (of `job` when filtered), counted by Redis; the prefix filter is not counted. */
  count: number;
}

/** One page of runtime schedules and their count: `limit` records read, never the whole set. */
export async function loadRuntimePage(api: Schedules, q: RuntimeQuery): Promise<RuntimePage> {
  const [page, count] = await Promise.all([
    api.list({ source: 'runtime', limit: q.limit, cursor: q.cursor ?? null, ...(q.prefix !== undefined && { prefix: q.prefix }), ...(q.job !== undefined && { job: q.job }) }),
    api.count({ source: 'runtime', ...(q.job !== undefined && { job: q.job }) }),
  ]);
  return { ...page, count };
}

/** One schedule as the store keeps it, with its recent history; undefined when there is none of that id. */
export async function loadScheduleState(api: Schedules, redis: RedisClient, prefix: string, id: string): Promise<{ view: ScheduleView; history: OccurrenceRecord[] } | undefined> {
  const view = await api.get(id);
  if (!view) return undefined;
  return { view, history: await readHistory(redis, prefix, id, HISTORY_ROWS) };
}

/** A removed schedule whose history is still kept (30 days), with that history; undefined when there is none. */
export async function loadRemovedSchedule(api: Schedules, redis: RedisClient, prefix: string, id: string): Promise<{ removed: RemovedScheduleView; history: OccurrenceRecord[] } | undefined> {
  const removed = await api.getRemoved(id);
  if (!removed) return undefined;
  return { removed, history: await readHistory(redis, prefix, id, HISTORY_ROWS) };
}
