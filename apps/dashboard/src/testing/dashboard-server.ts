import type { Server } from 'node:http';
import { catalog } from '@tickwork/jobs';
import { createLogger, QueueSet } from '@tickwork/runtime';
import { startRedisServer, type RedisServerHandle } from '@tickwork/testkit';
import type { Redis } from 'ioredis';
import { createDashboardApp } from '../app.js';

export const USER = 'ops';
export const PASSWORD = 'correct-horse';
export const AUTH = { authorization: `Basic ${Buffer.from(`${USER}:${PASSWORD}`).toString('base64')}` };

export interface TestDashboard {
  base: string;
  /** `host:port` the browser would send as Host. */
  origin: string;
  prefix: string;
  redisServer: RedisServerHandle;
  redis: Redis;
  queues: QueueSet;
  /** GET with credentials. */
  get(path: string): Promise<Response>;
  /** POST a form with credentials and the given extra headers; redirects are not followed. */
  post(path: string, form: Record<string, string>, headers?: Record<string, string>): Promise<Response>;
  close(): Promise<void>;
}

/** The real express app on port 0 against a private redis-server, as main.ts wires it. */
export async function startDashboard(prefix = 'tw'): Promise<TestDashboard> {
  const redisServer = await startRedisServer();
  const redis = redisServer.client();
  const log = createLogger('test', 'silent');
  const queues = new QueueSet(redis, prefix, log);
  const app = await createDashboardApp({ catalog, queues, redis, log, user: USER, password: PASSWORD });
  const http: Server = app.listen(0);
  await new Promise((r) => http.once('listening', r));
  const addr = http.address();
  const base = `http://127.0.0.1:${typeof addr === 'object' && addr ? addr.port : 0}`;
  return {
    base,
    origin: base,
    prefix,
    redisServer,
    redis,
    queues,
    get: (path) => fetch(`${base}${path}`, { headers: AUTH }),
    post: (path, form, headers = {}) =>
      fetch(`${base}${path}`, {
        method: 'POST',
        headers: { ...AUTH, 'content-type': 'application/x-www-form-urlencoded', ...headers },
        body: new URLSearchParams(form).toString(),
        redirect: 'manual',
      }),
    async close() {
      http.closeAllConnections();
      await new Promise((r) => http.close(r));
      await queues.close();
      await redisServer.stop();
    },
  };
}
