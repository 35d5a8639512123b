import { randomBytes, timingSafeEqual } from 'node:crypto';
import type { Request, RequestHandler } from 'express';
import { signedIn } from './basic-auth.js';

/** Name of the hidden form field that carries the token. */
export const CSRF_FIELD = '_csrf';

export interface Csrf {
  /** Put in every form as `<input type="hidden" name="_csrf">`. */
  token: string;
  /** Refuses (403) a state-changing request unless it comes from this dashboard's own pages. */
  protect: RequestHandler;
}

/**
 * The browser sends Basic-auth credentials with any request to the dashboard, including a form another
 * site posts to it, so every POST must prove it comes from a page this process served. Two independent
 * checks, both required:
 * - the `Origin` header (or, when a browser omits it, the `Referer`) names the host the request was sent
 *   to. The host, not the scheme, is compared so the check holds behind a TLS-terminating proxy;
 * - the form carries this process's random token, which another origin cannot read.
 * The token lives as long as the process: a restart invalidates open forms, which is fine for an ops tool.
 * Expects the body to be parsed already (express.urlencoded).
 */
export function createCsrf(token: string = randomBytes(32).toString('base64url')): Csrf {
  const expected = Buffer.from(token);
  const protect: RequestHandler = (req, res, next) => {
    const problem = originProblem(req) ?? tokenProblem(req, expected);
    if (!problem) return next();
    res.status(403).type('text/plain').send(`forbidden: ${problem}; submit the form from the dashboard page itself`);
  };
  return { token, protect };
}

export const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

/**
 * The Origin half of the check, for every state-changing request the dashboard answers: Bull Board's
 * `/queues/api/...` routes (add, retry, clean, promote, pause, empty, remove) included, which carry no
 * token. Bull Board's own page calls them with fetch from this origin, so the browser sends a matching
 * Origin; a form another site posts (even `enctype=text/plain`, which needs no preflight) carries that
 * site's Origin and is refused before any route sees it.
 */
export const sameOriginOnly: RequestHandler = (req, res, next) => {
  if (SAFE_METHODS.has(req.method)) return next();
  const problem = originProblem(req);
  if (!problem) return next();
  res.status(403).type('text/plain').send(`forbidden: ${problem}; use the dashboard's own pages`);
};

function originProblem(req: Request): string | undefined {
  const source = req.get('origin') ?? req.get('referer');
  if (!source) return 'the request has neither an Origin nor a Referer header';
  let host: string;
  try {
    host = new URL(source).host;
  } catch {
    return `the request's origin ${JSON.stringify(source)} is not a URL`;
  }
  if (!host || host !== req.get('host')) return `the request comes from ${JSON.stringify(source)}, not from this dashboard`;
  return undefined;
}

function tokenProblem(req: Request, expected: Buffer): string | undefined {
  const body: unknown = req.body;
  const given = typeof body === 'object' && body !== null ? (body as Record<string, unknown>)[CSRF_FIELD] : undefined;
  if (typeof given !== 'string') return 'the CSRF token is missing';
  const buf = Buffer.from(given);
  if (buf.length !== expected.length || !timingSafeEqual(buf, expected)) return 'the CSRF token is wrong (reload the page)';
  return undefined;
}

/**
 * Viewers read and change nothing: every state-changing request of a viewer answers 403, on tickwork's
 * routes and Bull Board's API alike (the read-only board hides its buttons; this refuses a hand-made call).
 */
export const viewersReadOnly: RequestHandler = (req, res, next) => {
  if (SAFE_METHODS.has(req.method)) return next();
  const user = signedIn(res);
  if (user.role === 'admin') return next();
  const message = `forbidden: user "${user.name}" has the viewer role, which is read-only; ask an admin to do this`;
  if (req.path.startsWith('/queues/api/')) return void res.status(403).json({ error: message, message });
  res.status(403).type('text/plain').send(`${message}\n`);
};
