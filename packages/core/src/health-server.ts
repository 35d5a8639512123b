import { createHash, timingSafeEqual } from 'node:crypto';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import { TickworkError } from './errors.js';
import type { Logger } from './logger.js';

export type HealthCheck = () => Promise<{ ok: boolean; detail?: Record<string, unknown> }>;

/** `/healthz`'s answer: the process is up and serving HTTP (liveness: nothing else is asked). */
export const LIVE_BODY = JSON.stringify({ status: 'ok' });

/** Runs a readiness check; a check that throws is not ready. */
export async function readiness(check: HealthCheck): Promise<{ status: number; body: string }> {
  const result = await check().catch((err: Error) => ({ ok: false, detail: { error: err.message } }));
  return { status: result.ok ? 200 : 503, body: JSON.stringify({ status: result.ok ? 'ready' : 'not ready', ...result.detail }) };
}

/** Ready when every check is; the details of all are merged. */
export function allReady(...checks: HealthCheck[]): HealthCheck {
  return async () => {
    const results = await Promise.all(checks.map((c) => c()));
    return { ok: results.every((r) => r.ok), detail: Object.assign({}, ...results.map((r) => r.detail ?? {})) as Record<string, unknown> };
  };
}

/**
 * Whether a request carries `Authorization: Bearer <token>`. Both sides are hashed first, so the
 * comparison takes the same time whatever the length or content of what was sent.
 */
export function bearerMatches(req: Pick<IncomingMessage, 'headers'>, token: string): boolean {
  const sent = /^Bearer (.+)$/.exec(req.headers.authorization ?? '')?.[1] ?? '';
  const digest = (s: string) => createHash('sha256').update(s).digest();
  return timingSafeEqual(digest(sent), digest(token));
}

/**
 * The scheduler and worker have no UI; this tiny server gives orchestrators `GET /healthz` (liveness: the
 * process is up) and `GET /readyz` (readiness: `ready` passes, e.g. Redis answers and the app is doing its
 * job), both open. Extra routes (metrics) are mounted through `routes`; with `routesToken` they require
 * `Authorization: Bearer <token>`.
 */
export async function startHealthServer(opts: {
  port: number;
  log: Logger;
  ready: HealthCheck;
  routes?: Record<string, () => Promise<{ contentType: string; body: string }>>;
  routesToken?: string | undefined;
}): Promise<Server> {
  const server = createServer((req, res) => {
    const path = (req.url ?? '/').split('?')[0] ?? '/';
    const handle = async () => {
      if (path === '/healthz') {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(LIVE_BODY);
        return;
      }
      if (path === '/readyz') {
        const { status, body } = await readiness(opts.ready);
        res.writeHead(status, { 'content-type': 'application/json' });
        res.end(body);
        return;
      }
      const route = opts.routes?.[path];
      if (route && opts.routesToken !== undefined && !bearerMatches(req, opts.routesToken)) {
        res.writeHead(401, { 'content-type': 'application/json', 'www-authenticate': 'Bearer' });
        res.end(JSON.stringify({ error: 'send Authorization: Bearer <METRICS_TOKEN>' }));
        return;
      }
      if (route) {
        const out = await route();
        res.writeHead(200, { 'content-type': out.contentType });
        res.end(out.body);
        return;
      }
      res.writeHead(404, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ error: 'not found' }));
    };
    handle().catch((err: Error) => {
      opts.log.error({ err }, 'health server request failed');
      if (!res.headersSent) res.writeHead(500);
      res.end();
    });
  });
  await listen(server, opts.port);
  return server;
}

/** Another process holds the port: the message names the variable that moves it. */
export class PortInUseError extends TickworkError {
  override name = 'PortInUseError';
  constructor(readonly port: number) {
    super(`port ${port} is already in use (PORT=${port}); stop what listens there or set PORT to a free port`);
  }
}

/** Starts `server` on `port`; resolves once it listens, rejects (PortInUseError for EADDRINUSE) if it cannot. */
export function listen(server: Server, port: number): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    server.once('error', (err: NodeJS.ErrnoException) => reject(err.code === 'EADDRINUSE' ? new PortInUseError(port) : err));
    server.listen(port, () => resolve());
  });
}

/** Redis answers PING: the readiness signal every app shares. */
export function redisPingCheck(redis: { ping(): Promise<string> }): HealthCheck {
  return async () => {
    try {
      await redis.ping();
      return { ok: true };
    } catch (err) {
      return { ok: false, detail: { redis: (err as Error).message } };
    }
  };
}
