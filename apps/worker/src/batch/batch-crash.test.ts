/**
 * Batch jobs across real worker processes: a batch whose worker is killed (kill -9) mid-batch is put back
 * when its lease expires and handled by another worker, each job's effects committed once; a worker frozen
 * (SIGSTOP) past its batch's lease, then woken after another worker committed the batch, commits nothing;
 * a batch stopped by a shutdown past its drain deadline goes back to the queue, not as a failed attempt.
 */
import { fileURLToPath } from 'node:url';
import { waitFor } from '@tickwork/testkit';
import { describe, expect, it } from 'vitest';
import { useWorkerProcesses } from '../testing/worker-processes.js';
import { BT_KEYS } from '../testing/batch-fixtures.js';

const JOBS_MODULE = fileURLToPath(new URL('../../dist/testing/batch-fixtures.js', import.meta.url));
const LEASE_MS = 2000;
const procs = useWorkerProcesses({ jobsModule: JOBS_MODULE });

const startWorker = (env: Record<string, string> = {}) => procs.start({ WORKER_BATCH_LEASE_MS: String(LEASE_MS), ...env });

const addJobs = (n: number) => procs.queues.get('bt').addBulk(Array.from({ length: n }, (_, i) => ({ name: 'bt.sum', data: { n: i } })));
const count = async () => Number(await procs.redis.get(BT_KEYS.count));
const allCompleted = async () => (await procs.queues.get('bt').getCompletedCount()) === 50 && (await procs.queues.get('bt').getActiveCount()) === 0;

describe('batch jobs when a worker dies or freezes', () => {
  it("puts a killed worker's batch back once its lease expires; another worker commits each job's effects once", async () => {
    const a = await startWorker();
    await procs.redis.set(BT_KEYS.pauseOnce, '60000');
    await addJobs(50);
    await waitFor(async () => (await procs.redis.get(BT_KEYS.paused)) !== null, { what: "worker A's batch in its pause" });
    expect(await procs.queues.get('bt').getActiveCount()).toBe(50);
    a.proc.kill('SIGKILL');
    await a.exited;
    const killedAt = Date.now();
    await startWorker();
    await waitFor(async () => (await count()) === 50 && (await allCompleted()), { timeoutMs: 30_000, what: 'the batch committed by worker B' });
    // Put back within the lease and one check after it (plus B's start-up), not BullMQ's 30 s lock.
    expect(Date.now() - killedAt).toBeLessThan(LEASE_MS * 1.25 + 10_000);
    expect(await procs.redis.scard(BT_KEYS.done)).toBe(50);
    expect(await count()).toBe(50);
    // Both workers were handed all 50; only B's batch committed.
    expect(await procs.redis.llen(BT_KEYS.handled)).toBe(100);
    expect(await procs.redis.zcard('tickwork:bt:batches')).toBe(0);
  }, 60_000);

  it('commits nothing from a worker frozen past its lease and woken after another worker committed the batch', async () => {
    const a = await startWorker();
    await procs.redis.set(BT_KEYS.pauseOnce, String(LEASE_MS * 2));
    await addJobs(50);
    await waitFor(async () => (await procs.redis.get(BT_KEYS.paused)) !== null, { what: "worker A's batch in its pause" });
    a.proc.kill('SIGSTOP');
    const b = await startWorker();
    await waitFor(async () => (await count()) === 50 && (await allCompleted()), { timeoutMs: 30_000, what: 'the batch committed by worker B' });
    expect(b.logs().some((l) => l.msg === "batches' leases expired: their jobs were put back")).toBe(true);
    a.proc.kill('SIGCONT');
    await a.waitForLog((l) => typeof l.msg === 'string' && l.msg.startsWith("batch's lease was lost"), 'A finds its lease lost', 30_000);
    expect(await count()).toBe(50);
    expect(await procs.redis.scard(BT_KEYS.done)).toBe(50);
    expect(await allCompleted()).toBe(true);
  }, 60_000);

  it('gives a batch stopped by a shutdown back to the queue, not as a failed attempt', async () => {
    const a = await startWorker({ DRAIN_TIMEOUT_MS: '300' });
    await procs.redis.set(BT_KEYS.pauseOnce, '60000');
    const jobs = await addJobs(50);
    await waitFor(async () => (await procs.redis.get(BT_KEYS.paused)) !== null, { what: "worker A's batch in its pause" });
    await a.stop('SIGTERM');
    expect(a.logs().some((l) => l.msg === 'batch stopped by the shutdown; its jobs go back to the queue')).toBe(true);
    await startWorker();
    await waitFor(async () => (await count()) === 50 && (await allCompleted()), { timeoutMs: 30_000, what: 'the batch committed by worker B' });
    const job = await procs.queues.get('bt').getJob(String(jobs[0]?.id));
    expect(job?.attemptsMade).toBe(1);
    expect(await procs.queues.get('bt.dlq').count()).toBe(0);
  }, 60_000);
});
