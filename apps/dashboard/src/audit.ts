import { isRefusal, recordAction, recordRefusal, type AuditAction } from '@tickwork/operations';
import type { Logger, RedisClient } from '@tickwork/core';
import type { RequestHandler, Response } from 'express';
import { signedIn } from './basic-auth.js';
import { SAFE_METHODS } from './csrf.js';

const DETAIL = 'auditDetail';

/**
 * What a route adds to its request's audit entry, e.g. a cancel's job id and reason (the path alone does
 * not say them; the body is never recorded whole: it carries the form token and job data).
 */
export function noteAuditDetail(res: Response, detail: Record<string, string | number | undefined>): void {
  const clean = Object.fromEntries(Object.entries(detail).flatMap(([k, v]) => (v === undefined || v === '' ? [] : [[k, String(v)]])));
  res.locals[DETAIL] = { ...(res.locals[DETAIL] as Record<string, string> | undefined), ...clean };
}

/**
 * The audit log itself (its streams, retention, reading) lives in @tickwork/operations: the CLI writes it too.
 *
 * Every state-changing request a signed-in user makes (tickwork's actions and Bull Board's API alike) is
 * logged with who, what and the status it got. Those done go to the audit log; those refused (a viewer's
 * 403, a forged origin, a missing form token) are counted apart (operations' refusals.ts), so no flood of
 * refusals can push an action out of the log. Installed right after the login check, before the checks
 * that may refuse the request, so refusals are seen too.
 */
export function auditActions(deps: { redis: RedisClient; prefix: string; log: Logger }): RequestHandler {
  return (req, res, next) => {
    if (SAFE_METHODS.has(req.method)) return next();
    const user = signedIn(res);
    const target = (req.originalUrl.split('?')[0] ?? '').slice(0, 500);
    res.once('finish', () => {
      const status = res.statusCode;
      const detail = (res.locals[DETAIL] as Record<string, string> | undefined) ?? {};
      const refused = isRefusal(status);
      deps.log.info({ user: user.name, role: user.role, method: req.method, target, status, ...(refused && { refused }), ...(Object.keys(detail).length > 0 && { detail }) }, 'dashboard action');
      const entry: AuditAction = { source: 'dashboard', user: user.name, role: user.role, host: null, method: req.method, target, status, detail };
      (refused ? recordRefusal(deps.redis, deps.prefix, entry) : recordAction(deps.redis, deps.prefix, entry)).catch((err: Error) =>
        deps.log.warn({ err: { message: err.message }, user: user.name, target }, 'could not record the action in the audit log'),
      );
    });
    next();
  };
}
