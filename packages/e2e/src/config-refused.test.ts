/**
 * Settings each app used to accept and then misread stop it at start, naming the variable: a METRICS_TOKEN
 * no request could match, an empty QUEUE_PREFIX, a dashboard password hash costing a GiB per login, and a
 * REDIS_URL database Redis does not have (ioredis then went on, silently, on database 0). A database Redis
 * has is the one every app and the CLI use.
 */
import { createLogger, createRedis, QueueSet, type RedisClient } from '@tickwork/core';
import { appEntry, fixtureModule, freePort, startApp, startRedisServer, waitFor, type AppProcess, type RedisServerHandle } from '@tickwork/testkit';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';

vi.setConfig({ testTimeout: 120_000, hookTimeout: 60_000 });

type App = 'scheduler' | 'worker' | 'dashboard' | 'cli';

let server: RedisServerHandle;
const started: AppProcess[] = [];

beforeAll(async () => {
  server = await startRedisServer();
});
afterAll(async () => {
  await Promise.all(started.map((a) => a.stop('SIGKILL')));
  await server?.stop();
});

function run(app: App, env: Record<string, string>, args: string[] = []): AppProcess {
  const proc = startApp(
    appEntry(app),
    { REDIS_URL: server.url, REDIS_STARTUP_TIMEOUT_MS: '5000', JOBS_MODULE: fixtureModule('fast-catalog'), DASHBOARD_PASSWORD: 'long-enough', ...env },
    args,
  );
  started.push(proc);
  return proc;
}

async function failedStart(app: App, env: Record<string, string>, args: string[] = []): Promise<string> {
  const proc = run(app, { PORT: String(await freePort()), ...env }, args);
  expect(await proc.exited, `${app} exit code`).not.toBe(0);
  const output = proc.lines.join('\n');
  expect(output).not.toMatch(/"msg":"\w+ ready"/);
  return output;
}

/** A well-formed hash line asking for N = 2^20 (parsing it never runs scrypt). */
const COSTLY_HASH = `scrypt$1048576$8$1$${Buffer.alloc(16, 1).toString('base64url')}$${Buffer.alloc(32, 2).toString('base64url')}`;

describe('settings that would be misread stop the app at start, naming the variable', () => {
  it.each([
    ['scheduler', { METRICS_TOKEN: 'metrics-token-0123456789 ' }, 'METRICS_TOKEN is invalid: must be printable ASCII without spaces'],
    ['worker', { METRICS_TOKEN: 'métrics-token-0123456789' }, 'METRICS_TOKEN is invalid: must be printable ASCII without spaces'],
    ['worker', { METRICS_TOKEN: ' '.repeat(24) }, 'METRICS_TOKEN is set but empty: must be printable ASCII without spaces'],
    ['worker', { QUEUE_PREFIX: '' }, 'QUEUE_PREFIX is set but empty: must not be empty'],
    ['scheduler', { QUEUE_PREFIX: 'tickwork ' }, 'QUEUE_PREFIX is invalid: must not start or end with spaces'],
    ['dashboard', { DASHBOARD_USERS: `ann:admin:${COSTLY_HASH}` }, `DASHBOARD_USERS is invalid: entry 1 (user "ann"): the hash's N must be an integer from 1024 to 131072`],
    ['worker', { REDIS_URL: 'redis://127.0.0.1:6379/one' }, "REDIS_URL is invalid: the database (the URL's path) must be a whole number, 0 or more"],
    ['worker', { REDIS_CLUSTER_NODES: '127.0.0.1:1', REDIS_URL: 'redis://127.0.0.1:6379/2' }, 'REDIS_URL is invalid: database 2 refused with REDIS_CLUSTER_NODES'],
  ] as const)('%s with %j', async (app, env, message) => {
    const output = await failedStart(app, env);
    expect(output).toContain(`${app}: invalid environment`);
    expect(output).toContain(message);
    expect(output).not.toContain(COSTLY_HASH);
  });
});

describe("REDIS_URL's database", () => {
  it.each(['scheduler', 'worker', 'dashboard', 'cli'] as const)('%s stops at start on a database Redis does not have, and writes nothing to database 0', async (app) => {
    const output = await failedStart(app, { REDIS_URL: `${server.url}/99` }, app === 'cli' ? ['dlq', 'list'] : []);
    expect(output).toMatch(/Redis at REDIS_URL=redis:\/\/127\.0\.0\.1:\d+\/99 has no such database \(ERR DB index is out of range\)/);
    expect(output).not.toContain('Unhandled error event');
    expect(await server.client().dbsize()).toBe(0);
  });

  it('is the one the worker and the CLI use: a job enqueued by the CLI on database 3 runs there, and database 0 stays empty', async () => {
    const url = `${server.url}/3`;
    const worker = run('worker', { REDIS_URL: url, PORT: String(await freePort()), WORKER_QUEUES: 'fixture' });
    await worker.waitForLog((l) => l.msg === 'worker ready', 'worker ready', 90_000);
    const cli = run('cli', { REDIS_URL: url }, ['enqueue', 'fixture.work', '{"n":7}', '--id', 'on-db-3']);
    expect(await cli.exited, cli.lines.join('\n')).toBe(0);
    let db3: RedisClient | undefined;
    let queues: QueueSet | undefined;
    try {
      db3 = createRedis(url, 'command');
      queues = new QueueSet(db3, 'tickwork', createLogger('test', 'silent'));
      const fixture = queues.get('fixture');
      await waitFor(async () => (await fixture.getJobState('on-db-3')) === 'completed', { what: 'the job on database 3 completed', timeoutMs: 60_000 });
      expect(await db3.lrange('fixture:runs', 0, -1)).toEqual([expect.stringContaining('"n":7')]);
      expect(await server.client().dbsize()).toBe(0);
      const list = run('cli', { REDIS_URL: url }, ['dlq', 'list', '--json']);
      expect(await list.exited, list.lines.join('\n')).toBe(0);
    } finally {
      await queues?.close();
      db3?.disconnect();
      await worker.stop();
    }
  });
});
