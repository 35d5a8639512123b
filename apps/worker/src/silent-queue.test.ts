/**
 * Issue 37 §2, a queue that never goes silent, on one Redis: a real worker process takes a job enqueued
 * after Redis was frozen (SIGSTOP) for longer than the command deadline and resumed, and after Redis was
 * killed -9 and started again on its port. And its consumer watchdog: while Redis refuses the worker's
 * writes (CLIENT PAUSE WRITE: its fetches hang, its reads pass, so a due job waits untaken with free
 * slots), it logs, counts tickwork_worker_watchdog_heals_total and renews the connections; once writes
 * pass again the job is taken.
 */
import { createCatalog, createEnqueue, queueKeyspace, queueStructureKey } from '@tickwork/core';
import { fixtureModule, freePort, waitFor } from '@tickwork/testkit';
import { catalog, FIXTURE_KEYS } from '@tickwork/testkit/fixtures/fast-catalog';
import { describe, expect, it } from 'vitest';
import { readMetric } from './testing/read-metric.js';
import { useWorkerProcesses } from './testing/worker-processes.js';

const fx = useWorkerProcesses({
  jobsModule: fixtureModule('fast-catalog'),
  // A short deadline and watchdog keep the test short; the defaults are 5 s and 3 s.
  env: { REDIS_COMMAND_TIMEOUT_MS: '1000', WORKER_WATCHDOG_MS: '1000', WORKER_CONCURRENCY: '4' },
});

const enqueueOf = () => createEnqueue(createCatalog(catalog.jobs), fx.queues);

/** Whether job `n` of fixture.work has run (its handler records it). */
async function ran(n: number): Promise<boolean> {
  const runs = await fx.redis.lrange(FIXTURE_KEYS.runs, 0, -1);
  return runs.some((r) => (JSON.parse(r) as { n: number }).n === n);
}

describe('a queue that never goes silent, on one Redis', { timeout: 120_000 }, () => {
  it('takes a job enqueued after Redis was frozen past the command deadline, and after a Redis restart', async () => {
    const worker = await fx.start();
    const enqueue = enqueueOf();
    await enqueue(catalog.require('fixture.work'), { n: 1 });
    await waitFor(() => ran(1), { timeoutMs: 30_000, what: 'job 1 run before the freeze' });

    fx.server.pause();
    try {
      // The worker's heartbeat gets no reply within the deadline: its socket is dropped, which the outage log reports.
      await worker.waitForLog((l) => String(l.msg).startsWith('redis unreachable; reconnecting with backoff') && /REDIS_COMMAND_TIMEOUT_MS|Command timed out/.test(JSON.stringify(l.err)), 'a socket dropped on the deadline', 30_000);
    } finally {
      fx.server.resume();
    }
    await enqueue(catalog.require('fixture.work'), { n: 2 });
    await waitFor(() => ran(2), { timeoutMs: 30_000, what: 'job 2, enqueued after the freeze, run' });

    await fx.server.kill();
    await fx.server.restart();
    await enqueue(catalog.require('fixture.work'), { n: 3 });
    await waitFor(() => ran(3), { timeoutMs: 30_000, what: 'job 3, enqueued after the restart, run' });
    expect(worker.proc.exitCode).toBeNull();
  });

  it('the watchdog logs, counts and heals a consumer that leaves a due job untaken with free slots', async () => {
    const port = await freePort();
    const worker = await fx.start({ PORT: String(port) });
    const enqueue = enqueueOf();
    // Due in 1.5 s: added before writes are paused; while they are, no fetch of the worker can take it.
    const { id } = await enqueue(catalog.require('fixture.work'), { n: 10 }, { delayMs: 1500 });
    await fx.redis.call('CLIENT', 'PAUSE', '60000', 'WRITE');
    try {
      const delayed = queueStructureKey(queueKeyspace('tickwork', 'fixture', false), 'fixture', 'delayed');
      expect(await fx.redis.zscore(delayed, String(id))).not.toBeNull();
      await waitFor(async () => (await readMetric(port, 'tickwork_worker_watchdog_heals_total', { queue: 'fixture' })) >= 1, {
        timeoutMs: 30_000,
        what: 'a watchdog heal counted',
      });
      const warned = worker.logs().find((l) => typeof l.msg === 'string' && l.msg.startsWith('watchdog:') && l.level === 40);
      expect(warned).toMatchObject({ queue: 'fixture' });
      expect(await ran(10)).toBe(false);
    } finally {
      await fx.redis.call('CLIENT', 'UNPAUSE');
    }
    await waitFor(() => ran(10), { timeoutMs: 30_000, what: 'the job taken once writes pass again' });
    expect(worker.proc.exitCode).toBeNull();
  });
});
