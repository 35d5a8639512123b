/** SIGTERM drains: a real worker process finishes its active job before exiting 0, or past the deadline
 * aborts it, exits 0 and leaves it for another worker (nothing lost). */
import { createLogger, createEnqueue, QueueSet } from '@tickwork/core';
import { appEntry, fixtureModule, freePort, startApp, startRedisServer, waitFor, type RedisServerHandle } from '@tickwork/testkit';
import { catalog, FIXTURE_KEYS } from '@tickwork/testkit/fixtures/fast-catalog';
import type { Redis } from 'ioredis';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';

let server: RedisServerHandle;
let redis: Redis;
let queues: QueueSet;

beforeAll(async () => {
  server = await startRedisServer();
  redis = server.client();
  queues = new QueueSet(redis, 'tickwork', createLogger('test', 'silent'));
});
afterAll(async () => {
  await queues.close();
  await server.stop();
});
beforeEach(async () => {
  await redis.flushall();
});

const worker = async (env: Record<string, string>) =>
  startApp(appEntry('worker'), {
    REDIS_URL: server.url,
    JOBS_MODULE: fixtureModule('fast-catalog'),
    PORT: String(await freePort()),
    WORKER_CONCURRENCY: '1',
    ...env,
  });

const runs = async () => (await redis.lrange(FIXTURE_KEYS.runs, 0, -1)).map((r) => JSON.parse(r) as { n: number; pid: number });

describe('graceful drain on SIGTERM', () => {
  it('finishes the active job, then exits 0', async () => {
    const w = await worker({ DRAIN_TIMEOUT_MS: '20000' });
    await w.waitForLog((l) => l.msg === 'worker ready', 'worker ready');
    await createEnqueue(catalog, queues)(catalog.require('fixture.work'), { n: 1, ms: 1500 });
    await waitFor(async () => (await queues.get('fixture').getActiveCount()) === 1, { what: 'job active' });
    expect(await w.stop('SIGTERM')).toBe(0);
    expect((await runs()).map((r) => r.n)).toEqual([1]);
    expect(w.logs().find((l) => l.msg === 'workers drained')).toMatchObject({ timedOut: false });
  });

  it('past the deadline aborts the job, exits 0, and another worker completes it', async () => {
    const first = await worker({ DRAIN_TIMEOUT_MS: '300', WORKER_LOCK_DURATION_MS: '2000', WORKER_STALLED_INTERVAL_MS: '1000' });
    await first.waitForLog((l) => l.msg === 'worker ready', 'worker ready');
    await createEnqueue(catalog, queues)(catalog.require('fixture.work'), { n: 7, ms: 4000 });
    await waitFor(async () => (await queues.get('fixture').getActiveCount()) === 1, { what: 'job active' });
    expect(await first.stop('SIGTERM')).toBe(0);
    expect(first.logs().find((l) => l.msg === 'workers drained')).toMatchObject({ timedOut: true });

    const second = await worker({ WORKER_LOCK_DURATION_MS: '2000', WORKER_STALLED_INTERVAL_MS: '1000' });
    try {
      const done = await waitFor(async () => {
        const list = await runs();
        return list.some((r) => r.pid === second.proc.pid) ? list : undefined;
      }, { timeoutMs: 30_000, what: 'the aborted job to be completed by the second worker' });
      expect(done.filter((r) => r.pid === second.proc.pid).map((r) => r.n)).toEqual([7]);
    } finally {
      await second.stop('SIGTERM');
    }
  });
});
