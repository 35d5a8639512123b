/**
 * Liveness, readiness and the metrics token, asked of the built apps as real processes: /healthz answers
 * while the process is up, /readyz only while Redis answers and the app does its job (a worker that began
 * draining is not ready), /metrics wants the bearer token when METRICS_TOKEN is set.
 */
import { request, type IncomingHttpHeaders } from 'node:http';
import { createEnqueue, createLogger, QueueSet } from '@tickwork/core';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { catalog } from '@tickwork/testkit/fixtures/fast-catalog';
import { startApp, type AppProcess, freePort, appEntry, fixtureModule, startRedisServer, type RedisServerHandle, waitFor } from '@tickwork/testkit';

vi.setConfig({ testTimeout: 60_000, hookTimeout: 60_000 });

const TOKEN = 'metrics-token-0123456789abcdef';
let server: RedisServerHandle;
const ports: Record<'scheduler' | 'worker' | 'dashboard', number> = { scheduler: 0, worker: 0, dashboard: 0 };
const apps: AppProcess[] = [];

async function start(app: 'scheduler' | 'worker' | 'dashboard', env: Record<string, string> = {}): Promise<AppProcess> {
  ports[app] = await freePort();
  const proc = startApp(appEntry(app), {
    REDIS_URL: server.url,
    JOBS_MODULE: fixtureModule('fast-catalog'),
    PORT: String(ports[app]),
    DASHBOARD_PASSWORD: 'readiness-password',
    ...env,
  });
  apps.push(proc);
  await proc.waitForLog((l) => l.msg === `${app} ready`, `${app} ready`);
  return proc;
}

/**
 * One request on a connection of its own (`agent: false`): apps come and go on reused ports here, and a
 * kept-alive socket to a killed process would fail the next request.
 */
function get(app: keyof typeof ports, path: string, headers: Record<string, string> = {}): Promise<{ status: number; headers: IncomingHttpHeaders; text(): Promise<string>; json(): Promise<unknown> }> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port: ports[app], path, headers, agent: false }, (res) => {
      let body = '';
      res.on('data', (c: Buffer) => (body += c.toString('utf8')));
      res.on('end', () =>
        resolve({ status: res.statusCode ?? 0, headers: res.headers, text: async () => body, json: async () => JSON.parse(body) as unknown }),
      );
    });
    req.on('error', reject);
    req.end();
  });
}
const statusOf = async (app: keyof typeof ports, path: string) => (await get(app, path)).status;

beforeAll(async () => {
  server = await startRedisServer();
});
// Each test starts its own apps: a worker left from an earlier test would take the next test's jobs.
afterEach(async () => {
  await Promise.all(apps.splice(0).map((a) => a.stop('SIGKILL')));
});
afterAll(async () => {
  await server.stop();
});

describe('health, readiness and metrics of the real apps', () => {
  it('scheduler, worker and dashboard are live and ready; /metrics needs the token when METRICS_TOKEN is set', async () => {
    await Promise.all([start('scheduler', { METRICS_TOKEN: TOKEN }), start('worker', { METRICS_TOKEN: TOKEN }), start('dashboard')]);
    for (const app of ['scheduler', 'worker', 'dashboard'] as const) {
      expect(await statusOf(app, '/healthz'), app).toBe(200);
      const ready = await get(app, '/readyz');
      expect(ready.status, app).toBe(200);
      expect(await ready.json()).toMatchObject({ status: 'ready' });
    }
    expect(await (await get('worker', '/readyz')).json()).toEqual({ status: 'ready', workers: 'running' });

    for (const app of ['scheduler', 'worker'] as const) {
      for (const headers of [{} as Record<string, string>, { authorization: 'Bearer wrong' }, { authorization: `Bearer ${TOKEN}x` }, { authorization: TOKEN }, { authorization: `Basic ${TOKEN}` }]) {
        const res = await get(app, '/metrics', headers);
        expect(res.status, `${app} ${JSON.stringify(headers)}`).toBe(401);
        expect(res.headers['www-authenticate']).toBe('Bearer');
        expect(await res.text()).not.toContain('tickwork_');
      }
      const ok = await get(app, '/metrics', { authorization: `Bearer ${TOKEN}` });
      expect(ok.status).toBe(200);
      expect(await ok.text()).toContain('tickwork_process_cpu_user_seconds_total');
    }
  });

  it('without METRICS_TOKEN /metrics is open; a METRICS_TOKEN under 16 characters stops the app at start', async () => {
    const open = await start('worker', { WORKER_CONCURRENCY: '1' });
    expect(await statusOf('worker', '/metrics')).toBe(200);
    await open.stop();
    const bad = startApp(appEntry('scheduler'), { REDIS_URL: server.url, JOBS_MODULE: fixtureModule('fast-catalog'), PORT: String(await freePort()), METRICS_TOKEN: 'short' });
    expect(await bad.exited).not.toBe(0);
    expect(bad.lines.join('\n')).toContain('METRICS_TOKEN is invalid: must be at least 16 characters');
  });

  it('a worker draining after SIGTERM is live but not ready; it exits once its job is done', async () => {
    const worker = await start('worker', { WORKER_CONCURRENCY: '1', DRAIN_TIMEOUT_MS: '30000' });
    const queues = new QueueSet(server.client(), 'tickwork', createLogger('test', 'silent'));
    try {
      // Long enough that the checks below end well before the job does, even on a loaded machine (with 3 s
      // the worker once finished and exited while /healthz was being asked: ECONNRESET).
      await createEnqueue(catalog, queues)(catalog.require('fixture.work'), { n: 1, ms: 10_000 });
      await waitFor(async () => (await queues.get('fixture').getActiveCount()) === 1, { what: 'job active' });
      worker.proc.kill('SIGTERM');
      const draining = await waitFor(async () => {
        const res = await get('worker', '/readyz');
        return res.status === 503 ? ((await res.json()) as unknown) : undefined;
      }, { what: '/readyz to answer 503 while draining' }).catch((err: Error) => {
        // What the worker said, so a failure here tells why it stopped answering.
        throw new Error(`${err.message}; the worker's last lines:\n${worker.lines.slice(-15).join('\n')}`);
      });
      expect(draining).toMatchObject({ status: 'not ready', workers: 'draining' });
      expect(await statusOf('worker', '/healthz')).toBe(200);
      expect(await worker.exited).toBe(0);
    } finally {
      await queues.close();
    }
  });

  it('while Redis is down every app is live but not ready, and ready again once it is back', async () => {
    await Promise.all([start('scheduler'), start('worker'), start('dashboard')]);
    await server.kill();
    for (const app of ['scheduler', 'worker', 'dashboard'] as const) {
      await waitFor(async () => (await statusOf(app, '/readyz')) === 503, { what: `${app} /readyz 503 with Redis down` });
      expect(await statusOf(app, '/healthz'), app).toBe(200);
    }
    await server.restart();
    for (const app of ['scheduler', 'worker', 'dashboard'] as const) {
      await waitFor(async () => (await statusOf(app, '/readyz')) === 200, { what: `${app} /readyz 200 with Redis back`, timeoutMs: 30_000 });
    }
  });
});
