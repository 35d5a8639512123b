/**
 * Batch jobs on BullMQ's public paths only (WORKER_BULLMQ_FAST_PATH=off: the public batch store), in real
 * worker processes: a worker killed (kill -9) mid-batch leaves its jobs to BullMQ's stalled check, and
 * another worker handles them, each job's `ctx.tx` effect committed once and each job completed once.
 */
import { fileURLToPath } from 'node:url';
import { waitFor } from '@tickwork/testkit';
import { describe, expect, it } from 'vitest';
import { useWorkerProcesses } from '../testing/worker-processes.js';
import { BT_KEYS } from '../testing/batch-fixtures.js';

const JOBS_MODULE = fileURLToPath(new URL('../../dist/testing/batch-fixtures.js', import.meta.url));
const PREFIX = 'tickwork';
const procs = useWorkerProcesses({ jobsModule: JOBS_MODULE });

/** A worker process on BullMQ's public paths: the public batch store, short leases and stalled checks. */
const startWorker = () => procs.start({ WORKER_BULLMQ_FAST_PATH: 'off', WORKER_BATCH_LEASE_MS: '1000', WORKER_STALLED_INTERVAL_MS: '500' });

describe('batch jobs on the public batch store', () => {
  it("commits each job's effects once when a worker is killed mid-batch and another takes its jobs", async () => {
    const a = await startWorker();
    await procs.redis.set(BT_KEYS.pauseOnce, '60000');
    const added = await procs.queues.get('bt').addBulk(Array.from({ length: 150 }, (_, n) => ({ name: 'bt.sum', data: { n } })));
    await waitFor(async () => (await procs.redis.get(BT_KEYS.paused)) !== null, { what: "worker A's batch in its pause" });
    const bt = procs.queues.get('bt');
    // BullMQ holds the batch's jobs: active, locked by A's batch.
    expect(await bt.getActiveCount()).toBeGreaterThan(0);
    a.proc.kill('SIGKILL');
    await a.exited;
    await startWorker();
    await waitFor(async () => Number(await procs.redis.get(BT_KEYS.count)) === 150 && (await bt.getCompletedCount()) === 150, { timeoutMs: 45_000, what: 'every job committed by worker B' });
    expect(Number(await procs.redis.get(BT_KEYS.count))).toBe(150);
    expect(await procs.redis.scard(BT_KEYS.done)).toBe(150);
    const completed = await bt.getCompleted(0, -1);
    expect(new Set(completed.map((j) => j.id))).toEqual(new Set(added.map((j) => j.id)));
    expect(await bt.getJobCounts('wait', 'active', 'delayed', 'failed')).toEqual({ wait: 0, active: 0, delayed: 0, failed: 0 });
    // Nothing of the batches left behind in tickwork's keys: no lease held, no done record unacknowledged.
    await waitFor(async () => (await procs.redis.zcard(`${PREFIX}:bt:batch-leases`)) === 0, { what: "A's lapsed lease dropped" });
    // Each record goes once its job's acknowledgement is in (just after the job shows completed).
    await waitFor(async () => (await procs.redis.hlen(`${PREFIX}:bt:batch-done`)) === 0, { what: 'the done records dropped' });
    // The fast store's keys were never written.
    expect(await procs.redis.exists(`${PREFIX}:bt:batches`, `${PREFIX}:bt:batch-format`)).toBe(0);
  }, 90_000);
});
