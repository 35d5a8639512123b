/**
 * Compacted runs through the real worker, on its fast paths and on BullMQ's public paths: a run with a key
 * of its own keeps its full record for IDEMPOTENCY_FULL_RECORD_SECONDS, then only its fingerprint; a
 * duplicate is suppressed all through the job's window (with the result, then without it), and the key
 * runs again once the window has passed. Short spans and windows (seconds); no fixed sleeps.
 */
import { fileURLToPath } from 'node:url';
import { createLogger, createRedis, QueueSet } from '@tickwork/core';
import { IdempotencyLedger, type RunRecordPlace } from '@tickwork/exactly-once';
import { freePort, startApp, startRedisServer, waitFor, type AppProcess, type RedisServerHandle } from '@tickwork/testkit';
import type { Job } from 'bullmq';
import type { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RT_KEYS } from './testing/retention-fixtures.js';

const WORKER = fileURLToPath(new URL('../dist/main.js', import.meta.url));
const FIXTURES = fileURLToPath(new URL('../dist/testing/retention-fixtures.js', import.meta.url));
const WINDOW_MS = 8000; // rt.compacted's idempotencyWindow
const place: RunRecordPlace = { kind: 'key', windowMs: WINDOW_MS };

describe.each(['auto', 'off'] as const)('a compacted run (WORKER_BULLMQ_FAST_PATH=%s)', (fastPath) => {
  let server: RedisServerHandle;
  let redis: Redis;
  let queues: QueueSet;
  let producer: ReturnType<typeof createRedis>;
  let worker: AppProcess;
  // The worker's settings, to find its records (the full span decides whether a window is compacted).
  let ledger: IdempotencyLedger;

  beforeAll(async () => {
    server = await startRedisServer();
    redis = server.client();
    producer = createRedis(server.url, 'command');
    queues = new QueueSet(producer, 'tickwork', createLogger('test', 'silent'));
    ledger = new IdempotencyLedger(redis, { prefix: 'tickwork', fullRecordMs: 1000 });
    worker = startApp(WORKER, {
      REDIS_URL: server.url,
      JOBS_MODULE: FIXTURES,
      PORT: String(await freePort()),
      IDEMPOTENCY_FULL_RECORD_SECONDS: '1',
      WORKER_BULLMQ_FAST_PATH: fastPath,
    });
    await worker.waitForLog((l) => l.msg === 'worker ready', 'worker ready', 30_000);
  }, 60_000);
  afterAll(async () => {
    await worker?.stop('SIGKILL');
    await queues?.close();
    producer?.disconnect();
    await server?.stop();
  });

  const run = async (name: string): Promise<Job> => {
    const job = await queues.get('rt').add('rt.compacted', { name });
    await waitFor(async () => (await job.getState()) === 'completed', { timeoutMs: 30_000, what: `${name} completed` });
    return (await queues.get('rt').getJob(String(job.id))) ?? job;
  };
  const effects = (name: string) => redis.llen(RT_KEYS.effects(name));

  it('suppresses a duplicate with its result, then by its fingerprint, for the whole window; then runs the key again', async () => {
    const name = `c-${fastPath}`;
    const key = `rt.compacted@${name}`;
    expect((await run(name)).returnvalue).toEqual({ effects: 1, key });
    const completedAt = (await ledger.inspect(key, place))?.completedAt?.getTime() ?? 0;
    expect((await run(name)).returnvalue).toEqual({ effects: 1, key });

    await waitFor(async () => (await redis.exists(ledger.keyOf(key))) === 0, { timeoutMs: 10_000, what: 'the worker to compact the record' });
    expect(await ledger.inspect(key, place)).toMatchObject({ state: 'done', compacted: true });
    const duplicate = await run(name);
    expect(duplicate.returnvalue ?? null).toBeNull(); // a fingerprint keeps no result
    expect(await effects(name)).toBe(1);

    // The fingerprint outlives the window by at most a twelfth of it; then the key is new again.
    await waitFor(async () => (await ledger.inspect(key, place)) === undefined, { timeoutMs: 3 * WINDOW_MS, intervalMs: 100, what: 'the fingerprint to expire' });
    const [s, us] = await redis.time();
    expect(Number(s) * 1000 + Number(us) / 1000).toBeGreaterThanOrEqual(completedAt + WINDOW_MS);
    expect((await run(name)).returnvalue).toEqual({ effects: 2, key });
  }, 60_000);
});
