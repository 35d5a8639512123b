import { createHash, timingSafeEqual } from 'node:crypto';
import type { Request, RequestHandler } from 'express';

/**
 * HTTP Basic auth. Credentials are compared as SHA-256 digests with timingSafeEqual, so neither their
 * length nor their content leaks through response timing.
 */
export function basicAuth(user: string, password: string, onWrongCredentials: (req: Request) => void = () => {}, realm = 'tickwork'): RequestHandler {
  const expected = digest(`${user}:${password}`);
  return (req, res, next) => {
    const header = req.headers.authorization ?? '';
    const [scheme, encoded] = header.split(' ');
    if (scheme?.toLowerCase() === 'basic' && encoded) {
      const given = digest(Buffer.from(encoded, 'base64').toString('utf8'));
      if (timingSafeEqual(given, expected)) return next();
      // Only offered-and-wrong credentials count: a browser's first request, sent without any, does not.
      onWrongCredentials(req);
    }
    res.set('WWW-Authenticate', `Basic realm="${realm}", charset="UTF-8"`);
    res.status(401).json({ error: 'authentication required' });
  };
}

function digest(value: string): Buffer {
  return createHash('sha256').update(value).digest();
}
