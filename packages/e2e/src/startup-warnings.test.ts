/** Every app warns at start when Redis could lose queue keys or grow without bound, naming what to set. */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startApp, type AppProcess, freePort, appEntry, startRedisServer, type RedisServerHandle } from '@tickwork/testkit';

const APPS = ['scheduler', 'worker', 'dashboard'] as const;
let server: RedisServerHandle;
const started: AppProcess[] = [];

beforeAll(async () => {
  server = await startRedisServer();
});
afterAll(async () => {
  await Promise.all(started.map((a) => a.stop('SIGKILL')));
  await server.stop();
});

/** Starts `app` and returns its log lines up to its memory check's verdict (warnings, or the all-clear). */
async function memoryVerdict(app: (typeof APPS)[number]): Promise<Record<string, unknown>[]> {
  const proc = startApp(appEntry(app), { REDIS_URL: server.url, QUEUE_PREFIX: 'sw', PORT: String(await freePort()), DASHBOARD_PASSWORD: 'long-enough', LOG_LEVEL: 'info' });
  started.push(proc);
  const isVerdict = (l: Record<string, unknown>) => l.msg === 'redis memory settings ok' || (l.level === 40 && String(l.msg).includes('maxmemory'));
  await proc.waitForLog(isVerdict, `${app}'s memory settings check`, 30_000);
  // Both warnings are logged together: give the second one the same wait.
  if (!proc.logs().some((l) => l.msg === 'redis memory settings ok')) {
    await proc.waitForLog((l) => l.level === 40 && String(l.msg).includes('maxmemory-policy'), `${app}'s policy warning`, 30_000).catch(() => undefined);
  }
  await proc.stop('SIGTERM');
  return proc.logs().filter(isVerdict);
}

describe('start-up warnings about Redis memory settings', { timeout: 120_000 }, () => {
  it.each(APPS)('%s warns when maxmemory is unset and the policy evicts, saying what to set', async (app) => {
    await server.client().config('SET', 'maxmemory', '0');
    await server.client().config('SET', 'maxmemory-policy', 'allkeys-lru');
    const lines = await memoryVerdict(app);
    expect(lines.map((l) => [l.level, l.msg])).toEqual([
      [40, expect.stringContaining('Redis has no maxmemory: set `maxmemory <bytes>`')],
      [40, expect.stringContaining('maxmemory-policy is "allkeys-lru": set `maxmemory-policy noeviction`')],
    ]);
  });

  it.each(APPS)('%s says nothing more than "ok" with a maxmemory and noeviction', async (app) => {
    await server.client().config('SET', 'maxmemory', String(256 * 1024 * 1024));
    await server.client().config('SET', 'maxmemory-policy', 'noeviction');
    const lines = await memoryVerdict(app);
    expect(lines.map((l) => [l.level, l.msg, l.maxmemory, l.policy])).toEqual([[30, 'redis memory settings ok', 256 * 1024 * 1024, 'noeviction']]);
  });
});
