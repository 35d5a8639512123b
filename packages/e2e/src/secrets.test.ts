/** Secrets never reach the logs: a Redis password in REDIS_URL, the dashboard password, a webhook token. */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startApp, freePort, appEntry, fixtureModule, startRedisServer, type RedisServerHandle } from '@tickwork/testkit';

const REDIS_PASSWORD = 'redis-pw-7f3a9c';
const DASHBOARD_PASSWORD = 'dash-pw-19bd44';
const WEBHOOK_TOKEN = 'hook-token-5e21';

describe('secrets stay out of the logs', () => {
  let server: RedisServerHandle;
  beforeAll(async () => {
    server = await startRedisServer({ password: REDIS_PASSWORD });
  });
  afterAll(async () => server.stop());

  it('no app prints the Redis password, the dashboard password or a webhook token, even at debug level', async () => {
    const common = { REDIS_URL: server.url, JOBS_MODULE: fixtureModule('fast-catalog'), LOG_LEVEL: 'debug' };
    const apps = [
      startApp(appEntry('scheduler'), { ...common, PORT: String(await freePort()) }),
      startApp(appEntry('worker'), { ...common, PORT: String(await freePort()), ALERT_WEBHOOK_URL: `https://hooks.example.com/services/${WEBHOOK_TOKEN}` }),
      startApp(appEntry('dashboard'), { ...common, PORT: String(await freePort()), DASHBOARD_PASSWORD }),
    ];
    await Promise.all(apps.map((a) => a.waitForLog((l) => typeof l.msg === 'string' && l.msg.endsWith('ready'), 'app ready')));
    // A wrong Redis password: the auth error is logged, the password is not.
    const wrong = startApp(appEntry('worker'), { ...common, REDIS_URL: server.url.replace(encodeURIComponent(REDIS_PASSWORD), 'wrong-pw-0000'), PORT: String(await freePort()) });
    await wrong.waitForLog((l) => JSON.stringify(l).includes('WRONGPASS') || JSON.stringify(l).includes('NOAUTH'), 'an auth error');
    for (const app of apps) expect(await app.stop('SIGTERM')).toBe(0);
    await wrong.stop('SIGKILL'); // it never connected; only its log lines matter
    const output = [...apps, wrong].flatMap((a) => a.lines).join('\n');
    expect(output).not.toContain(REDIS_PASSWORD);
    expect(output).not.toContain('wrong-pw-0000');
    expect(output).not.toContain(DASHBOARD_PASSWORD);
    expect(output).not.toContain(WEBHOOK_TOKEN);
  });
});
