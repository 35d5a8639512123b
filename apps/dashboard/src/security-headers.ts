import type { Express, RequestHandler } from 'express';

/**
 * Headers every dashboard response gets (behind the login): nothing it serves may be cached by the
 * browser or a proxy (pages and JSON carry job data: payloads, errors, stacks), sniffed as another type,
 * or leak its URL to another site. `same-origin` rather than `no-referrer`: with `no-referrer` the browser
 * sends `Origin: null` on our own form posts, which the CSRF check would refuse. Bull Board's static
 * assets (scripts, styles) carry no job data and keep their caching.
 */
export const securityHeaders: RequestHandler = (req, res, next) => {
  res.set('Referrer-Policy', 'same-origin').set('X-Content-Type-Options', 'nosniff');
  if (!req.path.startsWith('/queues/static/')) res.set('Cache-Control', 'no-store');
  next();
};

/**
 * Express answers with `X-Powered-By` and weak ETags unless told otherwise, per app: Bull Board's adapter
 * is an express app of its own, so it is switched off there too. ETags would let a browser keep job data.
 */
export function quietExpress(app: Express): Express {
  return app.disable('x-powered-by').set('etag', false);
}
