/**
 * A batch job's queue run by worker processes on both batch stores, as during a rolling upgrade of BullMQ
 * (@tickwork/bullmq-engine batch/batch-lua-mixed.ts). A worker on the public store (WORKER_BULLMQ_FAST_PATH=off)
 * is killed (kill -9) after it committed its batches (their effects and done records written) and before it
 * acknowledged any of their jobs (stopped there by the fixture's BT_HALT_AFTER_COMMIT); then a worker on the
 * fast store finishes the queue, with no public store left to run BullMQ's stalled check. Each job's
 * `ctx.tx` effect is committed once, each job handed to a handler once and completed once (its first
 * attempt, not counted as a stall), and `batch-done` is empty at the end.
 */
import { fileURLToPath } from 'node:url';
import { waitFor, type AppProcess } from '@tickwork/testkit';
import { describe, expect, it } from 'vitest';
import { useWorkerProcesses } from '../testing/worker-processes.js';
import { BT_KEYS } from '../testing/batch-fixtures.js';

const JOBS_MODULE = fileURLToPath(new URL('../../dist/testing/batch-fixtures.js', import.meta.url));
const PREFIX = 'tickwork';
const JOBS = 250;
const HALTED = 'bt: halted after commit';
const procs = useWorkerProcesses({ jobsModule: JOBS_MODULE });

async function startWorker(env: Record<string, string>, engineLog: string): Promise<AppProcess> {
  const app = await procs.start(env);
  expect(app.logs().some((l) => l.msg === engineLog)).toBe(true);
  return app;
}

describe('a batch queue run by a public-store worker and a fast-store worker', () => {
  it("commits each job's effects once when the public worker dies between its commit and its acknowledgements", async () => {
    // Its locks last 2 leases (4 s) from its fetch: it is killed well before they expire, so its own
    // stalled check moves nothing, and the fast worker is the one that takes its jobs back.
    const a = await startWorker(
      { WORKER_BULLMQ_FAST_PATH: 'off', WORKER_BATCH_LEASE_MS: '2000', WORKER_STALLED_INTERVAL_MS: '500', BT_HALT_AFTER_COMMIT: '1' },
      "BullMQ engine: BullMQ's public paths only (WORKER_BULLMQ_FAST_PATH=off)",
    );
    const bt = procs.queues.get('bt');
    const added = await bt.addBulk(Array.from({ length: JOBS }, (_, n) => ({ name: 'bt.sum', data: { n } })));
    // Both of A's batch loops commit a batch and stop before acknowledging it.
    const halts = await waitFor(() => {
      const h = a.logs().filter((l) => l.msg === HALTED);
      return h.length === 2 ? h : undefined;
    }, { what: "both of A's batches committed and halted" });
    const committed = halts.reduce((sum, l) => sum + Number(l.jobs), 0);
    a.proc.kill('SIGKILL');
    await a.exited;
    expect(committed).toBeGreaterThan(0);
    expect(Number(await procs.redis.get(BT_KEYS.count))).toBe(committed);
    expect(await procs.redis.hlen(`${PREFIX}:bt:batch-done`)).toBe(committed);
    expect(await bt.getJobCounts('active', 'completed')).toEqual({ active: committed, completed: 0 });

    const b = await startWorker({ WORKER_BATCH_LEASE_MS: '1000' }, "BullMQ engine: fast path (the installed BullMQ matches tickwork's contract)");
    await waitFor(async () => (await bt.getCompletedCount()) === JOBS && (await procs.redis.hlen(`${PREFIX}:bt:batch-done`)) === 0, {
      timeoutMs: 45_000,
      what: 'every job completed by worker B, every done record dropped',
    });

    // Effects once: each job's effect committed once, and handed to a handler once (A's or B's).
    expect(Number(await procs.redis.get(BT_KEYS.count))).toBe(JOBS);
    expect(await procs.redis.scard(BT_KEYS.done)).toBe(JOBS);
    const handled = await procs.redis.lrange(BT_KEYS.handled, 0, -1);
    expect(handled).toHaveLength(JOBS);
    expect(new Set(handled).size).toBe(JOBS);
    // Completed once each: its one attempt, no stall counted, nothing left anywhere else.
    const completed = await bt.getCompleted(0, -1);
    expect(completed.map((j) => j.id).sort()).toEqual(added.map((j) => j.id).sort());
    expect(completed.filter((j) => j.attemptsMade !== 1 || j.stalledCounter !== 0)).toEqual([]);
    expect(await bt.getJobCounts('wait', 'active', 'delayed', 'failed', 'prioritized')).toEqual({ wait: 0, active: 0, delayed: 0, failed: 0, prioritized: 0 });
    expect(await procs.redis.hlen(`${PREFIX}:bt:batch-done`)).toBe(0);
    // A's committed jobs were completed by B's fetch, one BullMQ `completed` event each.
    const events = (await procs.redis.xrange(`${PREFIX}:bt:events`, '-', '+')).map(([, fields]) => fields);
    const completedEvents = events.filter((e) => e[1] === 'completed').map((e) => e[3]);
    expect(completedEvents).toHaveLength(committed);
    expect(new Set(completedEvents).size).toBe(committed);
    expect(events.filter((e) => e[1] === 'stalled')).toEqual([]);
    // B took them back from active itself (no stalled check ran: no public store was left).
    const putBack = b.logs().filter((l) => l.msg === 'jobs a dead BullMQ worker (a public batch store) left active were put back');
    expect(putBack.reduce((sum, l) => sum + Number(l.putBack), 0)).toBe(committed);
  }, 90_000);
});
