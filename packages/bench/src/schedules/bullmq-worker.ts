/**
 * The BullMQ side's worker process: a bare BullMQ Worker on the bench queue whose processor records the
 * fire lag (lag-recorder.ts) and returns. BullMQ has no scheduler process: this Worker also creates each
 * job scheduler's next job as it takes the current one, so its CPU is the closest thing to a scheduler's.
 *
 * Env: REDIS_URL, BENCH_QUEUE, BENCH_LAG_PORT, BENCH_CONCURRENCY (default 50).
 */
import { Worker, type Job } from 'bullmq';
import { Redis } from 'ioredis';
import { recordLag, serve } from './lag-recorder.js';

const url = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
const queue = process.env.BENCH_QUEUE ?? 'sched';
const connection = new Redis(url, { maxRetriesPerRequest: null });

/** A job scheduler's job is `repeat:<scheduler id>:<nominal ms>` (addJobScheduler-11.lua). */
function nominalOf(job: Job): number | undefined {
  if (!job.id?.startsWith('repeat:')) return undefined; // backlog jobs (lane.ts) have no nominal time
  const ms = Number(job.id?.slice(job.id.lastIndexOf(':') + 1));
  return Number.isFinite(ms) ? ms : undefined;
}

const worker = new Worker(
  queue,
  async (job: Job) => {
    const nominal = nominalOf(job);
    const i = (job.data as { i?: unknown } | undefined)?.i;
    if (nominal !== undefined) recordLag(nominal, typeof i === 'number' ? i : -1);
    return null;
  },
  {
    connection,
    concurrency: Number(process.env.BENCH_CONCURRENCY ?? 50),
    // What tickwork keeps by default (README): at most 5,000 finished jobs per queue. Set on the Worker, not
    // in the schedulers' template, so it costs nothing per scheduler at rest.
    removeOnComplete: { count: 5000 },
    removeOnFail: { count: 5000 },
  },
);
worker.on('error', (err) => process.stderr.write(`bullmq worker: ${err.message}\n`));
serve();
void worker.waitUntilReady().then(() => process.stdout.write('{"msg":"bullmq worker ready"}\n'));

const stop = () => {
  void worker.close().finally(() => {
    connection.disconnect();
    process.exit(0);
  });
};
process.on('SIGTERM', stop);
process.on('SIGINT', stop);
