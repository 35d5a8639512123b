import type { Server } from 'node:http';
import { catalog } from '@tickwork/jobs';
import { createLogger, QueueSet } from '@tickwork/runtime';
import { startRedisServer, type RedisServerHandle } from '@tickwork/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDashboardApp } from './app.js';
import { plainAdmin } from './users.js';

let server: RedisServerHandle;
let http: Server;
let base: string;
let queues: QueueSet;
const auth = (user: string, pass: string) => ({ authorization: `Basic ${Buffer.from(`${user}:${pass}`).toString('base64')}` });

beforeAll(async () => {
  server = await startRedisServer();
  const redis = server.client();
  queues = new QueueSet(redis, 'tickwork', createLogger('test', 'silent'));
  const app = await createDashboardApp({ catalog, queues, redis, log: createLogger('test', 'silent'), users: [plainAdmin('ops', 'correct-horse')] });
  http = app.listen(0);
  await new Promise((r) => http.once('listening', r));
  const addr = http.address();
  base = `http://127.0.0.1:${typeof addr === 'object' && addr ? addr.port : 0}`;
});
afterAll(async () => {
  http.close();
  await queues.close();
  await server.stop();
});

describe('dashboard', () => {
  it('answers /healthz without credentials', async () => {
    const res = await fetch(`${base}/healthz`);
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ status: 'ok' });
  });

  it.each(['/', '/queues', '/queues/api/queues', '/anything'])('requires credentials for %s', async (path) => {
    const res = await fetch(`${base}${path}`, { redirect: 'manual' });
    expect(res.status).toBe(401);
    expect((await fetch(`${base}${path}`, { headers: auth('ops', 'wrong-password'), redirect: 'manual' })).status).toBe(401);
    expect((await fetch(`${base}${path}`, { headers: auth('admin', 'correct-horse'), redirect: 'manual' })).status).toBe(401);
  });

  it('shows every catalog queue and its dead-letter queue to a logged-in operator', async () => {
    const res = await fetch(`${base}/queues/api/queues`, { headers: auth('ops', 'correct-horse') });
    expect(res.status).toBe(200);
    const body = (await res.json()) as { queues: { name: string }[] };
    expect(body.queues.map((q) => q.name).sort()).toEqual(
      ['billing', 'billing.dlq', 'email', 'email.dlq', 'maintenance', 'maintenance.dlq', 'reports', 'reports.dlq'].sort(),
    );
  });
});
