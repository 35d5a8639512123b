import type { Request, RequestHandler } from 'express';

export interface LoginThrottleOptions {
  /** Wrong passwords a client may send in one window before it is refused. */
  maxFailures?: number;
  windowMs?: number;
  /** Clients remembered at most; the least recently seen is forgotten first, so memory stays bounded. */
  maxClients?: number;
  now?: () => number;
}

interface Client {
  failures: number;
  windowStart: number;
}

export interface LoginThrottle {
  /** Before the credential check: answers 429 with Retry-After to a client that guessed wrong too often. */
  gate: RequestHandler;
  /** Called by the credential check when a request offered wrong credentials. */
  failed(req: Request): void;
}

/**
 * Wrong passwords are counted per client address in a fixed window; past the limit, every request from
 * that address (right password or not: a blocked guesser must learn nothing) answers 429 until the window
 * ends. Only failures count, so an operator's browser, which loads many pages and assets in parallel with
 * the right credentials, is never throttled, and a guesser at one address locks out nobody elsewhere.
 *
 * Hand-written rather than express-rate-limit: that library counts every request before the credential
 * check is known (a logged-in operator's parallel loads would count), and its memory store has no bound
 * on how many addresses it keeps. This one keeps at most `maxClients`, evicting the least recently seen.
 */
export function createLoginThrottle(opts: LoginThrottleOptions = {}): LoginThrottle {
  const maxFailures = opts.maxFailures ?? 10;
  const windowMs = opts.windowMs ?? 15 * 60_000;
  const maxClients = opts.maxClients ?? 10_000;
  const now = opts.now ?? Date.now;
  // A Map iterates in insertion order: re-inserting on every touch keeps the least recently seen first.
  const clients = new Map<string, Client>();

  const current = (key: string): Client | undefined => {
    const c = clients.get(key);
    if (c && now() - c.windowStart >= windowMs) {
      clients.delete(key);
      return undefined;
    }
    return c;
  };

  return {
    gate(req, res, next) {
      const c = current(clientKey(req));
      if (!c || c.failures < maxFailures) return next();
      const retryAfter = Math.max(1, Math.ceil((c.windowStart + windowMs - now()) / 1000));
      res.set('Retry-After', String(retryAfter));
      res.status(429).json({ error: `too many wrong passwords from this address; try again in ${retryAfter} s` });
    },
    failed(req) {
      const key = clientKey(req);
      const c = current(key) ?? { failures: 0, windowStart: now() };
      c.failures += 1;
      clients.delete(key);
      clients.set(key, c);
      if (clients.size > maxClients) {
        const oldest = clients.keys().next();
        if (!oldest.done) clients.delete(oldest.value);
      }
    },
  };
}

/** The socket's address (the dashboard sets no `trust proxy`, so X-Forwarded-For cannot be forged in). */
function clientKey(req: Request): string {
  return req.socket.remoteAddress ?? 'unknown';
}
