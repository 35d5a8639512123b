/**
 * A batch job's queue with a consumer tickwork does not own, in real processes: a tickwork worker process
 * running the `bt` batch job, whose batches each outlast several of BullMQ's stalled intervals, beside a
 * separate process running a stock BullMQ Worker's stalled check on the same queue every 500 ms. The stalled
 * check never takes a running batch's jobs (every job handled once, its effects committed once, completed
 * once; `batches`, `batch-ids` and active empty at the end), and the worker logs the foreign consumer once
 * and counts it in tickwork_batch_foreign_consumers. A queue whose batch-format marker another format wrote
 * is refused, its jobs left alone.
 */
import { fileURLToPath } from 'node:url';
import { freePort, startApp, waitFor, type AppProcess } from '@tickwork/testkit';
import { describe, expect, it } from 'vitest';
import { useWorkerProcesses } from '../testing/worker-processes.js';
import { BT_KEYS } from '../testing/batch-fixtures.js';
import { readMetric } from '../testing/read-metric.js';

const JOBS_MODULE = fileURLToPath(new URL('../../dist/testing/batch-fixtures.js', import.meta.url));
const STOCK_WORKER = fileURLToPath(new URL('../../dist/batch/stock-worker.fixture.js', import.meta.url));
const PREFIX = 'tickwork';
const STALLED_INTERVAL_MS = 500;
const JOBS = 300;
const procs = useWorkerProcesses({ jobsModule: JOBS_MODULE });

const startWorker = (port: number) => procs.start({ PORT: String(port), WORKER_BATCH_LEASE_MS: '2000' });

async function startStockWorker(): Promise<AppProcess> {
  const app = startApp(STOCK_WORKER, { REDIS_URL: procs.server.url, QUEUE: 'bt', QUEUE_PREFIX: PREFIX, STALLED_INTERVAL_MS: String(STALLED_INTERVAL_MS) });
  procs.track(app);
  await app.waitForLog((l) => l.msg === 'ready', 'the stock BullMQ Worker ready');
  return app;
}

describe("a batch job's queue with a consumer tickwork does not own", () => {
  it("keeps BullMQ's stalled check off running batches: every job handled, committed and completed once", async () => {
    const stock = await startStockWorker();
    const port = await freePort();
    const worker = await startWorker(port);
    // Every batch outlasts three of the stock Worker's stalled intervals.
    await procs.redis.set(BT_KEYS.slowEvery, String(STALLED_INTERVAL_MS * 3));
    const added = await procs.queues.get('bt').addBulk(Array.from({ length: JOBS }, (_, n) => ({ name: 'bt.sum', data: { n } })));
    const bt = procs.queues.get('bt');
    await waitFor(async () => Number(await procs.redis.get(BT_KEYS.count)) === JOBS && (await bt.getCompletedCount()) === JOBS && (await bt.getActiveCount()) === 0, {
      timeoutMs: 60_000,
      what: `${JOBS} jobs committed and completed`,
    });

    // Effects once: each job's effect committed once, each job handed to a handler once.
    expect(Number(await procs.redis.get(BT_KEYS.count))).toBe(JOBS);
    expect(await procs.redis.scard(BT_KEYS.done)).toBe(JOBS);
    const handled = await procs.redis.lrange(BT_KEYS.handled, 0, -1);
    expect(handled).toHaveLength(JOBS);
    expect(new Set(handled).size).toBe(JOBS);
    // Completed once each, nothing left anywhere else, the batch bookkeeping empty.
    const completed = await bt.getCompleted(0, -1);
    expect(new Set(completed.map((j) => j.id))).toEqual(new Set(added.map((j) => j.id)));
    expect(await bt.getJobCounts('wait', 'active', 'delayed', 'failed', 'prioritized')).toEqual({ wait: 0, active: 0, delayed: 0, failed: 0, prioritized: 0 });
    expect(await procs.redis.zcard(`${PREFIX}:bt:batches`)).toBe(0);
    expect(await procs.redis.hlen(`${PREFIX}:bt:batch-ids`)).toBe(0);
    expect(completed.every((j) => j.attemptsMade === 1)).toBe(true);
    // The stock Worker's stalled check ran all along, and moved nothing.
    expect(stock.logs().filter((l) => l.msg === 'stalled')).toEqual([]);
    const events = (await procs.redis.xrange(`${PREFIX}:bt:events`, '-', '+')).map(([, fields]) => fields[1]);
    expect(events).not.toContain('stalled');

    // Detected: logged once (the stock Worker's one connection), counted.
    const warning = await worker.waitForLog((l) => typeof l.msg === 'string' && l.msg.startsWith('a consumer tickwork does not own is attached to batch job queue bt'), 'the foreign consumer warning');
    expect(String(warning.consumer)).toMatch(/^tickwork:/);
    expect(worker.logs().filter((l) => typeof l.msg === 'string' && l.msg.startsWith('a consumer tickwork does not own'))).toHaveLength(1);
    expect(await readMetric(port, 'tickwork_batch_foreign_consumers', { queue: 'bt' })).toBe(1);
  }, 90_000);

  it('refuses a queue whose batch keys another format wrote, leaving its jobs alone', async () => {
    await procs.redis.set(`${PREFIX}:bt:batch-format`, '0');
    await procs.queues.get('bt').addBulk(Array.from({ length: 5 }, (_, n) => ({ name: 'bt.sum', data: { n } })));
    const worker = await startWorker(await freePort());
    const refusal = await worker.waitForLog((l) => typeof l.msg === 'string' && l.msg.includes('its batch keys (batches, batch-ids) are in format "0"'), 'the refusal');
    expect(refusal.level).toBe(50);
    expect(await procs.queues.get('bt').getWaitingCount()).toBe(5);
    expect(await procs.redis.get(BT_KEYS.count)).toBeNull();
    expect(await procs.redis.get(`${PREFIX}:bt:batch-format`)).toBe('0');
  }, 60_000);
});
