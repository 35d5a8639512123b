import { TickworkError, type Logger, type RedisClient } from '@tickwork/core';
import type { RequestHandler } from 'express';
import { signedIn } from './basic-auth.js';
import { SAFE_METHODS } from './csrf.js';

/** Actions kept in the stream (Redis trims it in whole blocks, so a few more may remain). */
export const AUDIT_MAX_LEN = 1000;
export const auditKey = (prefix: string): string => `${prefix}:meta:audit`;

export interface AuditEntry {
  /** The stream id: `<ms>-<seq>`, newest last. */
  id: string;
  at: string;
  user: string;
  role: string;
  method: string;
  /** The path the request was sent to (no query string, no body: bodies carry tokens and job data). */
  target: string;
  status: number;
}

/**
 * Every state-changing request a signed-in user makes (tickwork's actions and Bull Board's API alike) is
 * logged with who, what and the status it got, refused ones included (a viewer's 403, a forged origin),
 * and appended to a capped stream in Redis for the /audit page. Installed right after the login check,
 * before the checks that may refuse the request, so they are recorded too.
 */
export function auditActions(deps: { redis: RedisClient; prefix: string; log: Logger }): RequestHandler {
  const key = auditKey(deps.prefix);
  return (req, res, next) => {
    if (SAFE_METHODS.has(req.method)) return next();
    const user = signedIn(res);
    const target = (req.originalUrl.split('?')[0] ?? '').slice(0, 500);
    res.once('finish', () => {
      const status = res.statusCode;
      deps.log.info({ user: user.name, role: user.role, method: req.method, target, status }, 'dashboard action');
      deps.redis
        .xadd(key, 'MAXLEN', '~', AUDIT_MAX_LEN, '*', 'at', new Date().toISOString(), 'user', user.name, 'role', user.role, 'method', req.method, 'target', target, 'status', String(status))
        .catch((err: Error) => deps.log.warn({ err: { message: err.message }, user: user.name, target }, 'could not record the action in the audit stream'));
    });
    next();
  };
}

export class AuditQueryError extends TickworkError {
  override name = 'AuditQueryError';
}

/** One page, newest first; `before` is the id of the last entry of the previous page. */
export async function readAudit(redis: RedisClient, prefix: string, opts: { before?: string | undefined; limit: number }): Promise<{ entries: AuditEntry[]; next: string | null }> {
  if (opts.before !== undefined && !/^\d{1,20}-\d{1,20}$/.test(opts.before)) throw new AuditQueryError('before must be an entry id such as 1717000000000-0');
  const raw = await redis.xrevrange(auditKey(prefix), opts.before === undefined ? '+' : `(${opts.before}`, '-', 'COUNT', opts.limit + 1);
  const entries = raw.slice(0, opts.limit).map(([id, fields]): AuditEntry => {
    const f = new Map<string, string>();
    for (let i = 0; i + 1 < fields.length; i += 2) f.set(fields[i] ?? '', fields[i + 1] ?? '');
    return { id, at: f.get('at') ?? '', user: f.get('user') ?? '', role: f.get('role') ?? '', method: f.get('method') ?? '', target: f.get('target') ?? '', status: Number(f.get('status') ?? 0) };
  });
  return { entries, next: raw.length > opts.limit ? (entries.at(-1)?.id ?? null) : null };
}
