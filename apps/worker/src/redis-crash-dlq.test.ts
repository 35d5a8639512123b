/**
 * Chaos: Redis is killed (-9) and restarted from its AOF while two workers are completing, retrying and
 * dead-lettering a mixed batch; some dead-letter moves are cut off mid-way. Afterwards every job is still
 * completed or dead-lettered exactly once (the move is idempotent and the sweep finishes interrupted
 * ones), and every completed job's run is recorded.
 */
import { createLogger, QueueSet } from '@tickwork/core';
import { listDeadLetters } from '@tickwork/operations';
import { startRedisServer, waitFor, type AppProcess, type RedisServerHandle } from '@tickwork/testkit';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { CONSERVATION_PREFIX, enqueueMix, expectConserved, startConservationWorker, waitUntilSettled } from './testing/conservation-check.js';
import { CONSERVATION_QUEUE as Q } from './testing/conservation-jobs.js';

vi.setConfig({ testTimeout: 180_000, hookTimeout: 60_000 });

const TOTAL = 400;

let server: RedisServerHandle;
const workers: AppProcess[] = [];

beforeAll(async () => {
  server = await startRedisServer({ appendonly: true });
});
afterAll(async () => {
  await Promise.all(workers.map((w) => w.stop('SIGKILL')));
  await server?.stop();
});

async function startWorker(): Promise<AppProcess> {
  const app = await startConservationWorker(server.url, 4);
  workers.push(app);
  return app;
}

describe('a Redis crash while jobs complete, retry and dead-letter', () => {
  it(`${TOTAL} mixed jobs, Redis killed -9 midway and restarted: each completed or dead-lettered, exactly once`, async () => {
    const producer = server.client();
    const queues = new QueueSet(producer, CONSERVATION_PREFIX, createLogger('test', 'silent'));
    await enqueueMix(queues, TOTAL);
    await Promise.all([startWorker(), startWorker()]);
    // Crash once dead-lettering is under way, so moves are in flight when Redis dies.
    await waitFor(async () => (await listDeadLetters(queues, Q)).length >= 10, { timeoutMs: 60_000, what: '10 dead letters' });
    const settledBefore = (await queues.get(Q).getCompletedCount()) + (await listDeadLetters(queues, Q)).length;
    await queues.close();
    await server.kill();
    // Not a hollow crash: work was still in progress when Redis died.
    expect(settledBefore).toBeLessThan(TOTAL);
    await server.restart();

    const check = new QueueSet(server.client(), CONSERVATION_PREFIX, createLogger('test', 'silent'));
    try {
      await waitUntilSettled(check, TOTAL, 120_000);
      await expectConserved(check, server.client(), TOTAL);
    } finally {
      await check.close();
    }
    for (const w of workers) expect(await w.stop('SIGTERM')).toBe(0);
  });
});
