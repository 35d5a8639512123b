import { hostname, userInfo } from 'node:os';
import { TickworkError, type RedisClient } from '@tickwork/core';

/**
 * The audit log: the actions taken on tickwork (the dashboard's buttons and Bull Board's, the CLI's
 * commands) in one Redis stream, kept by age. Requests the dashboard refused go elsewhere (refusals.ts): a
 * flood of them, which anyone with a viewer login or a page in an admin's browser can send, must never push
 * an action out of the log.
 */

/** How long an action is kept: the stream is trimmed by id (time) on every write, never by count. */
export const AUDIT_RETENTION_MS = 90 * 86_400_000;

export const auditKey = (prefix: string): string => `${prefix}:meta:audit`;

export type AuditSource = 'dashboard' | 'cli';

/** One action as it is written. */
export interface AuditAction {
  source: AuditSource;
  /** The dashboard user, or the OS user who ran the CLI. */
  user: string;
  /** The dashboard user's role; null for the CLI. */
  role: string | null;
  /** The machine the CLI ran on; null for the dashboard. */
  host: string | null;
  /** The HTTP method of a dashboard request; null for the CLI. */
  method: string | null;
  /** The path a dashboard request was sent to (no query string, no body), or the CLI command (`tickwork jobs cancel`). */
  target: string;
  /** The HTTP status a dashboard request got; null for the CLI, which records what it has done. */
  status: number | null;
  /** What the target does not say, e.g. a cancel's job id and reason (short texts, never a payload). */
  detail: Record<string, string>;
}

export interface AuditEntry extends AuditAction {
  /** The stream id: `<ms>-<seq>`, newest last. */
  id: string;
  at: string;
}

/** A listing parameter that does not parse: a 400 naming it. */
export class AuditQueryError extends TickworkError {
  override name = 'AuditQueryError';
}

const MAX_TEXT = 500;
const MAX_DETAIL_KEYS = 20;
const clip = (s: string, n = MAX_TEXT): string => (s.length > n ? `${s.slice(0, n - 1)}…` : s);

/**
 * The stream's fields, the same ones in the same order for every entry (empty when absent): Redis then
 * stores the names once per block of entries, not per entry (docs/capacity.md has the bytes per entry).
 * The time is the entry's id.
 */
export function auditFields(a: AuditAction): string[] {
  const detail = Object.entries(a.detail)
    .slice(0, MAX_DETAIL_KEYS)
    .map(([k, v]) => [clip(k, 40), clip(v)]);
  return [
    'source', a.source,
    'user', clip(a.user, 200),
    'role', a.role ?? '',
    'host', clip(a.host ?? '', 200),
    'method', a.method ?? '',
    'target', clip(a.target),
    'status', a.status === null ? '' : String(a.status),
    'detail', detail.length === 0 ? '' : JSON.stringify(Object.fromEntries(detail)),
  ];
}

/** Appends an action and drops those older than AUDIT_RETENTION_MS (`MINID ~`: whole blocks, so a few older ones may stay a little longer). */
export async function recordAction(redis: RedisClient, prefix: string, action: AuditAction, now = Date.now()): Promise<string> {
  const id = await redis.xadd(auditKey(prefix), 'MINID', '~', String(now - AUDIT_RETENTION_MS), '*', ...auditFields(action));
  return id ?? '';
}

const MAX_ID_PART = 18446744073709551615n; // a stream id is two unsigned 64-bit numbers

/**
 * `before` as a stream id (`<ms>-<seq>`), checked here: Redis answers an error, not an empty page, to an id
 * it cannot read or to "before 0-0".
 */
export function parseAuditBefore(raw: unknown): string | undefined {
  if (raw === undefined) return undefined;
  if (typeof raw !== 'string') throw new AuditQueryError('before must be given once');
  const m = /^(\d{1,20})-(\d{1,20})$/.exec(raw);
  if (!m || BigInt(m[1] ?? '') > MAX_ID_PART || BigInt(m[2] ?? '') > MAX_ID_PART) throw new AuditQueryError('before must be an entry id such as 1717000000000-0 (the "next" of the previous page)');
  return `${BigInt(m[1] ?? '')}-${BigInt(m[2] ?? '')}`;
}

/** A stream's entries as AuditEntry (an entry written before `source` existed is a dashboard one). */
export function auditEntryOf(id: string, fields: string[]): AuditEntry {
  const f = new Map<string, string>();
  for (let i = 0; i + 1 < fields.length; i += 2) f.set(fields[i] ?? '', fields[i + 1] ?? '');
  const text = (k: string): string | null => (f.get(k) ? (f.get(k) ?? null) : null);
  const status = text('status');
  let detail: Record<string, string> = {};
  try {
    const parsed: unknown = JSON.parse(f.get('detail') || '{}');
    if (typeof parsed === 'object' && parsed !== null) detail = Object.fromEntries(Object.entries(parsed).map(([k, v]) => [k, String(v)]));
  } catch {
    detail = { detail: f.get('detail') ?? '' };
  }
  const ms = Number(id.split('-')[0]);
  return {
    id,
    at: text('at') ?? new Date(Number.isFinite(ms) ? ms : 0).toISOString(),
    source: f.get('source') === 'cli' ? 'cli' : 'dashboard',
    user: f.get('user') ?? '',
    role: text('role'),
    host: text('host'),
    method: text('method'),
    target: f.get('target') ?? '',
    status: status === null ? null : Number(status),
    detail,
  };
}

export interface AuditPage {
  entries: AuditEntry[];
  /** Pass as `before` for the next (older) page; null on the last. */
  next: string | null;
}

/** One page of a stream, newest first; `before` (checked with parseAuditBefore) is the id of the previous page's last entry. */
export async function readAuditStream(redis: RedisClient, key: string, opts: { before?: string | undefined; limit: number }): Promise<AuditPage> {
  const before = parseAuditBefore(opts.before);
  if (before === '0-0') return { entries: [], next: null };
  const raw = await redis.xrevrange(key, before === undefined ? '+' : `(${before}`, '-', 'COUNT', opts.limit + 1);
  const entries = raw.slice(0, opts.limit).map(([id, fields]) => auditEntryOf(id, fields));
  return { entries, next: raw.length > opts.limit ? (entries.at(-1)?.id ?? null) : null };
}

/** One page of the actions, newest first. */
export function readAudit(redis: RedisClient, prefix: string, opts: { before?: string | undefined; limit: number }): Promise<AuditPage> {
  return readAuditStream(redis, auditKey(prefix), opts);
}

/**
 * Who runs the CLI: the OS user and the machine. `userInfo` throws where the uid has no passwd entry (some
 * containers); the environment's USER, else the uid, stands in.
 */
export function cliActor(): { user: string; host: string } {
  let user: string;
  try {
    user = userInfo().username;
  } catch {
    user = process.env.USER || process.env.LOGNAME || `uid ${process.getuid?.() ?? '?'}`;
  }
  return { user, host: hostname() };
}
