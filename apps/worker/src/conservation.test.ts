import { createLogger, QueueSet } from '@tickwork/core';
import { listDeadLetters } from '@tickwork/operations';
import { startTestRedis, TOPOLOGIES, waitFor, type AppProcess, type TestRedis } from '@tickwork/testkit';
import { CONSERVATION_PREFIX, enqueueMix, expectConserved, startConservationWorker, waitUntilSettled } from './testing/conservation-check.js';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { CONSERVATION_QUEUE as Q } from './testing/conservation-jobs.js';

vi.setConfig({ testTimeout: 180_000, hookTimeout: 60_000 });

const TOTAL = 1000;

describe.each(TOPOLOGIES)('conservation on %s Redis: nothing is lost, nothing is in two places', (topology) => {
  let target: TestRedis;
  let queues: QueueSet;
  const workers: AppProcess[] = [];

  async function startWorker(): Promise<AppProcess> {
    const app = await startConservationWorker(target.where, 8);
    workers.push(app);
    return app;
  }

  beforeAll(async () => {
    target = await startTestRedis(topology);
    queues = new QueueSet(target.client(), CONSERVATION_PREFIX, createLogger('test', 'silent'));
  });
  afterAll(async () => {
    await Promise.all(workers.map((w) => w.stop('SIGKILL')));
    await queues?.close();
    await target?.stop();
  });

  it(`${TOTAL} mixed jobs across 3 worker processes, one killed -9 midway: each completed or dead-lettered, exactly once`, async () => {
    const queue = queues.get(Q);
    await enqueueMix(queues, TOTAL);

    const [victim] = await Promise.all([startWorker(), startWorker(), startWorker()]);
    // Kill one process hard once work is under way: its active jobs stall and are redelivered; a final
    // failure it had not yet moved is picked up by the others' sweep.
    await waitFor(async () => (await queue.getCompletedCount()) >= 150, { timeoutMs: 60_000, what: '150 completed' });
    await victim?.stop('SIGKILL');

    await waitUntilSettled(queues, TOTAL, 150_000);
    await expectConserved(queues, target.client(), TOTAL);

    const reasons = new Map((await listDeadLetters(queues, Q)).map((d) => [d.entry.originalJobId, d.entry.failureReason]));
    expect(reasons.get('c-7')).toBe('poison 7');
    expect(reasons.get('c-8')).toMatch(/^invalid payload: i: /);
    expect(reasons.get('c-9')).toBe('unknown job');
  });
});
