/**
 * A Redis outage after a successful start, as the worker logs it: once when it begins, once with a summary
 * when Redis is back, nothing per retry in between; and SIGTERM during an outage stops the worker at once.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startApp, type AppProcess, freePort, appEntry, startRedisServer, type RedisServerHandle, waitFor } from '@tickwork/testkit';

let redis: RedisServerHandle;
let worker: AppProcess | undefined;
beforeAll(async () => {
  redis = await startRedisServer();
});
afterAll(async () => {
  await worker?.stop('SIGKILL');
  await redis?.stop();
});

const outagesLogged = (w: AppProcess) => w.logs().filter((l) => typeof l.msg === 'string' && l.msg.startsWith('redis unreachable')).length;
const problems = (w: AppProcess) => w.logs().filter((l) => typeof l.level === 'number' && l.level >= 40);

describe('a Redis outage under a running worker', { timeout: 60_000 }, () => {
  it('is logged once, summarised when Redis is back, and SIGTERM during one stops the worker promptly', async () => {
    worker = startApp(appEntry('worker'), { REDIS_URL: redis.url, PORT: String(await freePort()), LOG_LEVEL: 'info' });
    await worker.waitForLog((l) => l.msg === 'worker ready', 'worker ready');

    await redis.kill();
    await worker.waitForLog((l) => typeof l.msg === 'string' && l.msg.startsWith('redis unreachable'), 'the outage logged');
    // The outage itself (not a wait for work): ioredis retries many times in these seconds.
    await new Promise((r) => setTimeout(r, 3000));
    // The outage once; work that was under way when it began may say it failed, once each; no line per retry.
    const said = problems(worker).map((l) => String(l.msg));
    expect(said.filter((m) => m.startsWith('redis unreachable'))).toHaveLength(1);
    expect(said).toEqual([...new Set(said)]);
    expect(said.length).toBeLessThanOrEqual(3);

    await redis.restart();
    const summary = await worker.waitForLog((l) => l.msg === 'redis reachable again', 'the recovery summary');
    expect(summary).toMatchObject({ downMs: expect.any(Number), failedAttempts: expect.any(Number) });
    expect(summary.failedAttempts as number).toBeGreaterThan(1);

    await redis.kill();
    const w = worker;
    await waitFor(() => (outagesLogged(w) >= 2 ? true : undefined), { timeoutMs: 15_000, what: 'the second outage logged' });
    const stopping = Date.now();
    const code = await worker.stop('SIGTERM');
    expect(Date.now() - stopping).toBeLessThan(5000);
    expect(code).toBe(0);
    worker = undefined;
  });
});
