/**
 * The built apps as real processes (what the containers run) against a private Redis: a scheduler, two
 * workers, the dashboard and the CLI.
 */
import { spawnSync } from 'node:child_process';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FIXTURE_KEYS } from '@tickwork/testkit/fixtures/fast-catalog';
import { startApp, type AppProcess, freePort, appEntry, fixtureModule, startRedisServer, type RedisServerHandle, waitFor } from '@tickwork/testkit';

describe('the stack as real processes', () => {
  let server: RedisServerHandle;
  let redis: Redis;
  let dashboardPort: number;
  const apps: Record<string, AppProcess> = {};
  const password = 'e2e-password-123';

  beforeAll(async () => {
    server = await startRedisServer();
    redis = server.client();
    const common = { REDIS_URL: server.url, JOBS_MODULE: fixtureModule('fast-catalog'), LOG_LEVEL: 'info' };
    dashboardPort = await freePort();
    apps.scheduler = startApp(appEntry('scheduler'), { ...common, PORT: String(await freePort()) });
    apps.worker1 = startApp(appEntry('worker'), { ...common, PORT: String(await freePort()), WORKER_CONCURRENCY: '1' });
    apps.worker2 = startApp(appEntry('worker'), { ...common, PORT: String(await freePort()), WORKER_CONCURRENCY: '1' });
    apps.dashboard = startApp(appEntry('dashboard'), { ...common, PORT: String(dashboardPort), DASHBOARD_PASSWORD: password });
    await Promise.all([
      apps.scheduler.waitForLog((l) => l.msg === 'scheduler ready', 'scheduler ready'),
      apps.worker1.waitForLog((l) => l.msg === 'worker ready', 'worker 1 ready'),
      apps.worker2.waitForLog((l) => l.msg === 'worker ready', 'worker 2 ready'),
      apps.dashboard.waitForLog((l) => l.msg === 'dashboard ready', 'dashboard ready'),
    ]);
  });

  afterAll(async () => {
    await Promise.all(Object.values(apps).map((a) => a.stop('SIGKILL')));
    await server.stop();
  });

  it('runs a fast schedule: each occurrence is processed once', async () => {
    const ticks = await waitFor(async () => {
      const list = await redis.lrange(FIXTURE_KEYS.ticks, 0, -1);
      return list.length >= 3 ? list : undefined;
    }, { timeoutMs: 20_000, what: 'three scheduled ticks' });
    expect(new Set(ticks).size).toBe(ticks.length);
    for (const key of ticks) expect(key).toMatch(/^fixture\.tick@\d{4}-\d{2}-\d{2}T/);
  });

  it('shares enqueued work between the two workers', async () => {
    const cli = spawnSync(process.execPath, [appEntry('cli'), 'enqueue', 'fixture.work', '{"n":0,"ms":100}', '--json'], {
      env: { PATH: process.env.PATH ?? '', REDIS_URL: server.url, JOBS_MODULE: fixtureModule('fast-catalog') },
      encoding: 'utf8',
    });
    expect(cli.status, cli.stderr).toBe(0);
    expect(JSON.parse(cli.stdout)).toMatchObject({ job: 'fixture.work', queue: 'fixture' });
    const producer = new Redis(server.url);
    const { createEnqueue, createCatalog, QueueSet, createLogger } = await import('@tickwork/core');
    const { catalog } = await import('@tickwork/testkit/fixtures/fast-catalog');
    const queues = new QueueSet(producer, 'tickwork', createLogger('test', 'silent'));
    const enqueue = createEnqueue(createCatalog(catalog.jobs), queues);
    for (let n = 1; n < 20; n++) await enqueue(catalog.require('fixture.work'), { n, ms: 100 });
    const runs = await waitFor(async () => {
      const list = (await redis.lrange(FIXTURE_KEYS.runs, 0, -1)).map((r) => JSON.parse(r) as { n: number; pid: number });
      return list.length >= 20 ? list : undefined;
    }, { timeoutMs: 30_000, what: '20 runs' });
    await queues.close();
    producer.disconnect();
    expect(runs.map((r) => r.n).sort((a, b) => a - b)).toEqual(Array.from({ length: 20 }, (_, i) => i));
    const pids = new Set(runs.map((r) => r.pid));
    expect(pids).toEqual(new Set([apps.worker1?.proc.pid, apps.worker2?.proc.pid]));
  });

  it('keeps the dashboard behind a login, except /healthz', async () => {
    const base = `http://127.0.0.1:${dashboardPort}`;
    expect((await fetch(`${base}/healthz`)).status).toBe(200);
    const anonymous = await fetch(`${base}/queues`);
    expect(anonymous.status).toBe(401);
    expect(anonymous.headers.get('www-authenticate')).toMatch(/^Basic /);
    const wrong = await fetch(`${base}/queues`, { headers: { authorization: `Basic ${Buffer.from('admin:nope').toString('base64')}` } });
    expect(wrong.status).toBe(401);
    const auth = { authorization: `Basic ${Buffer.from(`admin:${password}`).toString('base64')}` };
    expect((await fetch(`${base}/queues`, { headers: auth })).status).toBe(200);
    const api = (await (await fetch(`${base}/queues/api/queues`, { headers: auth })).json()) as { queues: { name: string }[] };
    expect(api.queues.map((q) => q.name)).toEqual(expect.arrayContaining(['fixture', 'fixture.dlq']));
    expect(apps.dashboard?.lines.join('\n')).not.toContain(password);
  });

  it('stops every app cleanly on SIGTERM', async () => {
    for (const name of ['scheduler', 'worker1', 'worker2', 'dashboard']) {
      const app = apps[name];
      expect(await app?.stop('SIGTERM'), `${name} exit code`).toBe(0);
      expect(app?.logs().some((l) => l.msg === 'stopped cleanly'), `${name} logged a clean stop`).toBe(true);
    }
  });
});
