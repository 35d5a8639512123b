import { createServer, type Server } from 'node:http';
import { TickworkError } from './errors.js';
import type { Logger } from './logger.js';

export type HealthCheck = () => Promise<{ ok: boolean; detail?: Record<string, unknown> }>;

/**
 * The scheduler and worker have no UI; this tiny server gives orchestrators (compose healthcheck,
 * Kubernetes probes) `GET /healthz`. Extra routes (metrics) can be mounted through `routes`.
 */
export async function startHealthServer(opts: {
  port: number;
  log: Logger;
  check: HealthCheck;
  routes?: Record<string, () => Promise<{ contentType: string; body: string }>>;
}): Promise<Server> {
  const server = createServer((req, res) => {
    const path = (req.url ?? '/').split('?')[0] ?? '/';
    const handle = async () => {
      if (path === '/healthz') {
        const result = await opts.check().catch((err: Error) => ({ ok: false, detail: { error: err.message } }));
        res.writeHead(result.ok ? 200 : 503, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ status: result.ok ? 'ok' : 'unhealthy', ...result.detail }));
        return;
      }
      const route = opts.routes?.[path];
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

/** Redis answers PING: the health signal the scheduler and worker share. */
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
