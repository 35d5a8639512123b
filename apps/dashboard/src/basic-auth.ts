import { createHmac, randomBytes } from 'node:crypto';
import type { Logger } from '@tickwork/core';
import { verifyPassword, type ParsedPasswordHash } from '@tickwork/operations';
import type { Request, RequestHandler, Response } from 'express';
import { clientAddress } from './client-address.js';
import { prepareCredentials } from './credentials.js';
import { challenge, checksBusy, tooManyAttempts } from './login-responses.js';
import { createLoginThrottle, type LoginThrottleOptions, type Ticket } from './login-throttle.js';
import { createCheckQueue, SHED, type CheckQueueOptions } from './password-checks.js';
import { isUserName, type DashboardUser, type Role } from './users.js';

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
  /** How many password checks run at once, and how many may wait. */
  checks?: CheckQueueOptions;
  /** The password check (default: scrypt's verifyPassword); a test wraps it to see what each login is checked against. */
  verify?: (password: string, hash: ParsedPasswordHash) => Promise<boolean>;
  now?: () => number;
}

export interface LoginDeps {
  users: readonly DashboardUser[];
  log: Logger;
  throttle?: LoginThrottleOptions;
  auth?: AuthOptions;
  realm?: string;
}

type Outcome = 'ok' | 'wrong' | typeof SHED;

/** Basic credentials as offered; the throttle's name for malformed ones, which no user can have. */
function offered(req: Request): { name: string; password: string; wellFormed: boolean } | undefined {
  const [scheme, encoded] = (req.headers.authorization ?? '').split(' ');
  if (scheme?.toLowerCase() !== 'basic' || !encoded) return undefined;
  const decoded = Buffer.from(encoded, 'base64').toString('utf8');
  const colon = decoded.indexOf(':');
  const name = colon < 0 ? decoded : decoded.slice(0, colon);
  return { name, password: colon < 0 ? '' : decoded.slice(colon + 1), wellFormed: colon >= 0 };
}

/**
 * HTTP Basic auth for several users, in this order for each request:
 *
 * 1. the throttle (login-throttle.ts): a blocked address, (address, name) pair or name gets 429 at once;
 * 2. a cache of successful checks: scrypt costs tens of milliseconds of CPU, too much for every request
 *    of a page that loads many (Bull Board polls its API), so a success is remembered for `cacheTtlMs`,
 *    keyed by an HMAC of name and password under a key drawn at start (the password is kept nowhere; a
 *    changed one misses). Parallel requests with the same credentials share one check;
 * 3. the throttle reserves the check, synchronously, so parallel requests cannot all get past step 1;
 * 4. the scrypt check waits its turn in a bounded queue (password-checks.ts), so a burst of guesses uses
 *    at most one thread of the pool and delays another address's login by at most one check;
 * 5. the check is the same for every name (credentials.ts): the user's hash, the plain admin's hashed at
 *    start, or a decoy of the same cost for an unknown name.
 *
 * Wrong credentials are never cached. The client's address is the socket's, or, behind a trusted proxy
 * (DASHBOARD_TRUSTED_PROXIES, express's `trust proxy`), the one the proxy forwarded.
 */
export async function createLogin(deps: LoginDeps): Promise<RequestHandler> {
  const opts = deps.auth ?? {};
  const ttl = opts.cacheTtlMs ?? 60_000;
  const max = opts.cacheMax ?? 1000;
  const now = opts.now ?? Date.now;
  const verify = opts.verify ?? verifyPassword;
  const realm = deps.realm ?? 'tickwork';
  const credentials = await prepareCredentials(deps.users);
  const throttle = createLoginThrottle(deps.log, deps.throttle);
  const queue = createCheckQueue(opts.checks);
  const cacheKey = randomBytes(32);
  const verified = new Map<string, number>();
  const inFlight = new Map<string, Promise<Outcome>>();

  const remember = (key: string) => {
    verified.delete(key);
    verified.set(key, now() + ttl);
    if (verified.size > max) verified.delete(verified.keys().next().value as string);
  };
  const check = async (address: string, ticket: Ticket, password: string, name: string, wellFormed: boolean): Promise<Outcome> => {
    const { user, hash } = credentials.lookup(name);
    const result = await queue.run(address, ticket.trusted, () => verify(password, hash));
    if (result === SHED) return SHED;
    return result && wellFormed && user !== undefined ? 'ok' : 'wrong';
  };

  return async (req, res, next) => {
    const address = clientAddress(req);
    const creds = offered(req);
    if (!creds) {
      // A browser's first request carries no credentials: it is not counted, but a blocked address is told.
      const refused = throttle.refusal(address);
      return refused ? tooManyAttempts(req, res, refused.retryAfterS) : challenge(req, res, realm);
    }
    // Counted under the name offered, known or not (a 429 must not tell which names exist).
    const counted = isUserName(creds.name) ? creds.name : '(malformed)';
    const refused = throttle.refusal(address, counted);
    if (refused) return tooManyAttempts(req, res, refused.retryAfterS);

    const key = createHmac('sha256', cacheKey).update(`${creds.wellFormed ? 1 : 0}${creds.name}\0${creds.password}`).digest('base64');
    const until = verified.get(key);
    let outcome: Outcome;
    if (until !== undefined && until > now()) outcome = 'ok';
    else if (inFlight.has(key)) {
      outcome = await (inFlight.get(key) as Promise<Outcome>);
      // The same wrong guess sent in parallel cost one check, but each copy counts as a failure.
      if (outcome === 'wrong') {
        const ticket = throttle.reserve(address, counted);
        if (ticket.refused) return tooManyAttempts(req, res, ticket.retryAfterS);
        ticket.failed();
      }
    } else {
      const ticket = throttle.reserve(address, counted);
      if (ticket.refused) return tooManyAttempts(req, res, ticket.retryAfterS);
      const pending = check(address, ticket, creds.password, creds.name, creds.wellFormed);
      inFlight.set(key, pending);
      try {
        outcome = await pending;
      } catch (err) {
        ticket.cancel();
        throw err;
      } finally {
        inFlight.delete(key);
      }
      if (outcome === 'ok') {
        ticket.succeeded();
        remember(key);
      } else if (outcome === 'wrong') ticket.failed();
      else ticket.cancel();
    }
    if (outcome === SHED) return checksBusy(req, res);
    const user = outcome === 'ok' ? credentials.lookup(creds.name).user : undefined;
    if (!user) return challenge(req, res, realm);
    (res.locals as { user?: SignedIn }).user = { name: user.name, role: user.role };
    next();
  };
}
