import { createHash, createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import { hashPassword, parsePasswordHash, verifyPassword } from '@tickwork/operations';
import type { Request, RequestHandler, Response } from 'express';
import type { DashboardUser, Role } from './users.js';

/** Who made a request, set by the login check for everything behind it. */
export interface SignedIn {
  name: string;
  role: Role;
}

export function signedIn(res: Response): SignedIn {
  const user = (res.locals as { user?: SignedIn }).user;
  // The login check runs before every route that calls this; a missing user is a wiring mistake.
  if (!user) throw new Error('no signed-in user on this request: the login check must run first');
  return user;
}

export interface AuthOptions {
  /** How long a successful scrypt check is remembered for the same user and password. Default 60 s. */
  cacheTtlMs?: number;
  /** Remembered checks at most (the oldest is forgotten first). Default 1000. */
  cacheMax?: number;
  now?: () => number;
}

/** Burnt on an unknown user name, so the answer takes as long as for a known one. */
const decoy = hashPassword(randomBytes(16).toString('hex')).then(parsePasswordHash);

/**
 * HTTP Basic auth for several users. A plain DASHBOARD_PASSWORD is compared as a SHA-256 digest with
 * timingSafeEqual; a DASHBOARD_USERS hash with scrypt, which costs tens of milliseconds of CPU, too much
 * for every request of a page that loads many (Bull Board polls its API). So a successful check is
 * remembered for `cacheTtlMs`, keyed by an HMAC of user and password under a key this process draws at
 * start (the password itself is kept nowhere, and a changed password misses the cache); parallel checks
 * of the same credentials share one scrypt run. Wrong credentials are never cached, and the login
 * throttle in front (login-throttle.ts) bounds how many a client may try.
 */
export function basicAuth(
  users: readonly DashboardUser[],
  onWrongCredentials: (req: Request) => void = () => {},
  opts: AuthOptions = {},
  realm = 'tickwork',
): RequestHandler {
  const byName = new Map(users.map((u) => [u.name, u]));
  const ttl = opts.cacheTtlMs ?? 60_000;
  const max = opts.cacheMax ?? 1000;
  const now = opts.now ?? Date.now;
  const cacheKey = randomBytes(32);
  const verified = new Map<string, number>();
  const inFlight = new Map<string, Promise<boolean>>();

  const check = async (user: DashboardUser | undefined, password: string): Promise<boolean> => {
    if (!user) {
      await verifyPassword(password, await decoy);
      return false;
    }
    if (user.password.kind === 'plain') return timingSafeEqual(createHash('sha256').update(password).digest(), user.password.sha256);
    const key = createHmac('sha256', cacheKey).update(`${user.name}\0${password}`).digest('base64');
    const until = verified.get(key);
    if (until !== undefined && until > now()) return true;
    verified.delete(key);
    let pending = inFlight.get(key);
    if (!pending) {
      pending = verifyPassword(password, user.password.hash).finally(() => inFlight.delete(key));
      inFlight.set(key, pending);
    }
    if (!(await pending)) return false;
    verified.set(key, now() + ttl);
    if (verified.size > max) {
      const oldest = verified.keys().next();
      if (!oldest.done) verified.delete(oldest.value);
    }
    return true;
  };

  return async (req, res, next) => {
    const header = req.headers.authorization ?? '';
    const [scheme, encoded] = header.split(' ');
    if (scheme?.toLowerCase() === 'basic' && encoded) {
      const decoded = Buffer.from(encoded, 'base64').toString('utf8');
      const colon = decoded.indexOf(':');
      const name = colon < 0 ? decoded : decoded.slice(0, colon);
      const user = byName.get(name);
      if (colon >= 0 && (await check(user, decoded.slice(colon + 1))) && user) {
        (res.locals as { user?: SignedIn }).user = { name: user.name, role: user.role };
        return next();
      }
      // Only offered-and-wrong credentials count: a browser's first request, sent without any, does not.
      onWrongCredentials(req);
    }
    res.set('WWW-Authenticate', `Basic realm="${realm}", charset="UTF-8"`);
    res.status(401).json({ error: 'authentication required' });
  };
}
