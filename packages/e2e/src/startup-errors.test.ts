/** Bad configuration stops each app at start with a message naming what is wrong. */
import { createServer } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startApp, freePort, appEntry, fixtureModule, startRedisServer, type RedisServerHandle } from '@tickwork/testkit';

let redis: RedisServerHandle;
beforeAll(async () => {
  redis = await startRedisServer({ password: 'the-right-one' });
});
afterAll(async () => {
  await redis?.stop();
});

async function failedStart(app: 'scheduler' | 'worker' | 'dashboard' | 'cli', env: Record<string, string>, args: string[] = []) {
  // The private Redis unless a test says otherwise: a start that should fail must never reach another one.
  const proc = startApp(appEntry(app), { REDIS_URL: redis.url, REDIS_STARTUP_TIMEOUT_MS: '1500', ...env }, args);
  const code = await proc.exited;
  return { code, output: proc.lines.join('\n') };
}

describe('start-up errors', () => {
  it.each(['scheduler', 'worker', 'dashboard'] as const)('%s refuses a malformed REDIS_URL, naming the variable', async (app) => {
    const { code, output } = await failedStart(app, { REDIS_URL: 'localhost:6379', DASHBOARD_PASSWORD: 'long-enough' });
    expect(code).not.toBe(0);
    expect(output).toContain(`${app}: invalid environment`);
    expect(output).toContain('REDIS_URL is invalid: must be a redis:// or rediss:// URL');
  });

  it('the worker refuses a non-numeric WORKER_CONCURRENCY', async () => {
    const { code, output } = await failedStart('worker', { WORKER_CONCURRENCY: 'lots' });
    expect(code).not.toBe(0);
    expect(output).toContain('WORKER_CONCURRENCY is invalid');
  });

  it('the dashboard refuses to start without a password, saying what to set', async () => {
    const { code, output } = await failedStart('dashboard', {});
    expect(code).not.toBe(0);
    expect(output).toContain('DASHBOARD_PASSWORD is not set: set DASHBOARD_PASSWORD');
  });

  it('the scheduler refuses a bad cron pattern, naming the job', async () => {
    const { code, output } = await failedStart('scheduler', { JOBS_MODULE: fixtureModule('bad-cron-catalog') });
    expect(code).not.toBe(0);
    expect(output).toContain('job "fixture.bad-cron": schedule.pattern "0 25 * * *" is not a valid cron expression');
  });

  it.each(['scheduler', 'worker', 'dashboard'] as const)('%s refuses PORT set to anything but a port number', async (app) => {
    const { code, output } = await failedStart(app, { PORT: '30 00', DASHBOARD_PASSWORD: 'long-enough' });
    expect(code).not.toBe(0);
    expect(output).toContain('PORT is invalid: must be a port number from 0 to 65535');
  });

  it('the worker refuses WORKER_CONCURRENCY=1e9 and anything over 1000', async () => {
    for (const value of ['1e9', '1001']) {
      const { code, output } = await failedStart('worker', { WORKER_CONCURRENCY: value });
      expect(code).not.toBe(0);
      expect(output).toContain('WORKER_CONCURRENCY is invalid');
    }
  });

  it('the dashboard refuses a password of spaces', async () => {
    const { code, output } = await failedStart('dashboard', { DASHBOARD_PASSWORD: ' '.repeat(12) });
    expect(code).not.toBe(0);
    expect(output).toContain('DASHBOARD_PASSWORD must have at least 8 characters besides leading and trailing spaces');
  });

  it('the scheduler counts NODE_ENV=" Production " as production and refuses SCHEDULE_SPEEDUP', async () => {
    const { code, output } = await failedStart('scheduler', { NODE_ENV: ' Production ', SCHEDULE_SPEEDUP: 'every=10s' });
    expect(code).not.toBe(0);
    expect(output).toContain('SCHEDULE_SPEEDUP is invalid: is refused when NODE_ENV=production');
  });

  it('the worker refuses WORKER_QUEUES naming a queue the catalog lacks, listing the known ones', async () => {
    const { code, output } = await failedStart('worker', { REDIS_URL: redis.url, WORKER_QUEUES: 'email,no-such-queue', PORT: String(await freePort()) });
    expect(code).not.toBe(0);
    expect(output).toContain('WORKER_QUEUES is invalid: no queue "no-such-queue" in the catalog; known queues: billing, email');
    expect(output).not.toContain('worker ready');
  });

  it.each(['scheduler', 'worker', 'dashboard', 'cli'] as const)(
    '%s stops at start when Redis does not answer or refuses the password, naming REDIS_URL without the password',
    async (app) => {
      const args = app === 'cli' ? ['dlq', 'list'] : [];
      const env = { DASHBOARD_PASSWORD: 'long-enough', PORT: String(await freePort()) };
      const nobody = `redis://:secret-pw@127.0.0.1:${await freePort()}`;
      const unreachable = await failedStart(app, { ...env, REDIS_URL: nobody }, args);
      expect(unreachable.code).not.toBe(0);
      expect(unreachable.output).toMatch(/cannot reach Redis at REDIS_URL=redis:\/\/:\*\*\*@127\.0\.0\.1:\d+\/?: tried \d+ time\(s\).*ECONNREFUSED/);
      const wrong = await failedStart(app, { ...env, REDIS_URL: redis.url.replace('the-right-one', 'secret-pw') }, args);
      expect(wrong.code).not.toBe(0);
      expect(wrong.output).toContain('refused the credentials');
      for (const { output } of [unreachable, wrong]) {
        expect(output).not.toContain('secret-pw');
        expect(output).not.toMatch(/ready/);
        expect(output).not.toContain('Unhandled error event');
      }
    },
  );

  it.each(['scheduler', 'worker', 'dashboard'] as const)('%s names PORT when the port is taken', async (app) => {
    const taken = createServer();
    await new Promise<void>((resolve) => taken.listen(0, resolve));
    const addr = taken.address();
    const port = typeof addr === 'object' && addr ? addr.port : 0;
    try {
      const { code, output } = await failedStart(app, { REDIS_URL: redis.url, PORT: String(port), DASHBOARD_PASSWORD: 'long-enough' });
      expect(code).not.toBe(0);
      expect(output).toContain(`port ${port} is already in use (PORT=${port})`);
    } finally {
      taken.close();
    }
  });
});
