import { DLQ_PAGE_MAX, DlqQueryError, type DlqFilter } from './page.js';

/** Entries a page shows when no limit is given. */
export const DLQ_PAGE_DEFAULT = 50;


export interface DlqListQuery {
  /** One origin queue, or every queue when absent. */
  queue?: string;
  filter: DlqFilter;
  limit: number;
  cursor?: string;
}

/**
 * The parameters of a DLQ listing, as strings from a URL or CLI flags (absent or '' = not given), checked
 * in one place for the dashboard's pages, its JSON API and `tickwork dlq list`.
 */
export function parseDlqListQuery(raw: Record<string, string | undefined>): DlqListQuery {
  const given = (k: string): string | undefined => (raw[k] === undefined || raw[k] === '' ? undefined : raw[k]);
  const limitRaw = given('limit');
  let limit = DLQ_PAGE_DEFAULT;
  if (limitRaw !== undefined) {
    limit = /^\d+$/.test(limitRaw) ? Number(limitRaw) : NaN;
    if (!(limit >= 1 && limit <= DLQ_PAGE_MAX)) throw new DlqQueryError(`limit must be an integer from 1 to ${DLQ_PAGE_MAX}, got ${JSON.stringify(limitRaw)}`);
  }
  const time = (k: 'since' | 'until'): Date | undefined => {
    const v = given(k);
    if (v === undefined) return undefined;
    // An ISO date or date-time, UTC unless it names an offset (a bare date is midnight UTC).
    const m = /^(\d{4}-\d{2}-\d{2})(?:[T ](\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?)(Z|[+-]\d{2}:\d{2})?)?$/.exec(v);
    const ms = m ? Date.parse(`${m[1]}T${m[2] ?? '00:00'}${m[3] ?? 'Z'}`) : NaN;
    if (!Number.isFinite(ms)) throw new DlqQueryError(`${k} must be an ISO date or date-time (e.g. 2024-05-01 or 2024-05-01T12:00:00Z), got ${JSON.stringify(v)}`);
    return new Date(ms);
  };
  const filter: DlqFilter = {};
  const name = given('name');
  const reason = given('reason');
  if (name !== undefined) filter.name = name;
  if (reason !== undefined) filter.reason = reason;
  const since = time('since');
  const until = time('until');
  if (since) filter.since = since;
  if (until) filter.until = until;
  if (since && until && since >= until) throw new DlqQueryError('since must be before until');
  const queue = given('queue');
  const cursor = given('cursor');
  return { filter, limit, ...(queue !== undefined && { queue }), ...(cursor !== undefined && { cursor }) };
}
