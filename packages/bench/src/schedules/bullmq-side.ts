/**
 * The BullMQ side: N job schedulers (`queue.upsertJobScheduler(id, { every, offset }, { name, data })`,
 * bullmq 6.7.0) on their own private Redis, then a bare BullMQ Worker process running them.
 *
 * BullMQ has no scheduler process: upserting stores the scheduler and its next job (delayed), and the
 * Worker adds each scheduler's following job as it takes the current one. So there is no "scheduler start"
 * to time (n/a), and the Worker's CPU stands where tickwork's scheduler CPU is reported.
 */
import { Queue } from 'bullmq';
import { fileURLToPath } from 'node:url';
import { waitFor } from '@tickwork/testkit';
import { fireWindow, privateRedis, progress, runPool, settledMemory, sleep, startChild } from './harness.js';
import type { BenchSettings, SideResult } from './side.js';
import type { Spread } from './spread.js';

const QUEUE = 'sched';
const PREFIX = 'bull';
/** Stored before the baseline so the script cache and queue meta are not counted per schedule; they never fire in the window. */
const WARM = 64;
const DAY_MS = 86_400_000;

export async function runBullmq(n: number, spread: Spread, s: BenchSettings): Promise<SideResult> {
  progress(`BullMQ, N=${n}: private Redis, ${n} job schedulers (${spread.describe})`);
  const redis = await privateRedis();
  const queue = new Queue(QUEUE, { connection: redis.client, prefix: PREFIX });
  try {
    for (let i = 0; i < WARM; i++) await queue.upsertJobScheduler(`warm-${i}`, { every: DAY_MS, offset: DAY_MS - 1 - i }, { name: 'warm', data: { i } });
    const baseline = await settledMemory(redis.client);
    const seconds = await runPool(n, s.concurrency, 'BullMQ upserts', (i) =>
      queue.upsertJobScheduler(`s-${i}`, spread.bullmq(i), { name: 'bench.tick', data: { i } }),
    );
    const stored = await queue.getJobSchedulersCount();
    if (stored !== n + WARM) throw new Error(`BullMQ: expected ${n + WARM} job schedulers, found ${stored}`);
    const bytesPerSchedule = ((await settledMemory(redis.client)) - baseline) / n;
    progress(`  ${(n / seconds).toFixed(0)} upserts/s, ${bytesPerSchedule.toFixed(0)} bytes per scheduler at rest; starting the Worker`);

    const worker = await startChild(
      fileURLToPath(new URL('./bullmq-worker.js', import.meta.url)),
      { REDIS_URL: redis.url, BENCH_QUEUE: QUEUE, BENCH_CONCURRENCY: String(s.workerConcurrency) },
      { lagPort: true },
    );
    await worker.app.waitForLog((l) => l.msg === 'bullmq worker ready', 'the BullMQ worker to start', 30_000);
    // Occurrences that fell due while the upserts ran (no Worker yet) run first: wait them out.
    await sleep(s.warmupSeconds * 1000);
    await waitFor(async () => (await queue.getWaitingCount()) < 200, { timeoutMs: 300_000, intervalMs: 500, what: 'the BullMQ backlog to drain' });
    progress(`  firing for ${s.fireSeconds} s`);
    const fire = await fireWindow({
      redis: redis.client,
      schedulers: [],
      workers: [worker],
      seconds: s.fireSeconds,
      graceMs: 3000,
      schedules: n,
      baselineMemory: baseline,
      dueIn: spread.dueIn,
    });
    await worker.stop();
    return { system: 'bullmq', n, upsertsPerS: n / seconds, bytesPerSchedule, rows: [{ replicas: null, startMs: null, fire }] };
  } finally {
    await queue.close();
    await redis.stop();
  }
}
