/**
 * One timed drain for the cluster row (cluster.ts): `queues` pre-filled with no-op jobs, then drained at
 * once by the workers a mode starts (one BullMQ Worker per queue), on one Redis or on a Redis Cluster.
 * Reports jobs/s over all queues, the Node CPU per job, and the Redis CPU per job with each master's share.
 */
import type { Worker } from 'bullmq';
import type { Redis } from 'ioredis';
import { redisCpu } from './redis-cpu.js';

/** Where a drain runs: one node or a cluster, with the Redis processes whose CPU counts (the masters). */
export interface Side {
  label: string;
  /** A plain client of each process that serves queue data (one node: that node; a cluster: each master). */
  masters(): Promise<Redis[]>;
  /** Throws unless the filled queues (one key of each) are spread as this side means them to be. */
  checkSpread(keys: string[]): Promise<void>;
}

/** What a mode starts for one drain: it fills the queues, then its workers take them. */
export interface Drain {
  fill(): Promise<void>;
  /** One key of each queue (its wait list), as the mode lays its keys out. */
  waitKeys(): string[];
  /** Starts the workers (timing starts here); resolves with them once they run. */
  start(): Promise<Worker[]>;
  /** Stops the workers and removes the queues (outside the timing). */
  close(): Promise<void>;
}

export interface Drained {
  rate: number;
  nodeUs: number;
  redisUs: number;
  /** Each master's share of the Redis CPU the drain cost, in the order of Side.masters(). */
  shares: number[];
}

/** Fills, then times the workers draining every job; fails on any failed job. */
export async function timeDrain(side: Side, drain: Drain, jobs: number): Promise<Drained> {
  await drain.fill();
  await side.checkSpread(drain.waitKeys());
  const masters = await side.masters();
  const cpu0 = await Promise.all(masters.map(redisCpu));
  let done = 0;
  let failed = 0;
  let finish!: () => void;
  const finished = new Promise<void>((resolve) => (finish = resolve));
  const t0 = performance.now();
  const node0 = process.cpuUsage();
  const workers = await drain.start();
  for (const w of workers) {
    w.on('completed', () => {
      if (++done === jobs) finish();
    });
    w.on('failed', (job, err) => {
      if (failed++ < 5) process.stderr.write(`cluster bench: job ${job?.id} failed: ${err.message}\n`);
      if (++done === jobs) finish();
    });
  }
  await finished;
  const seconds = (performance.now() - t0) / 1000;
  const node = process.cpuUsage(node0);
  const cpu = (await Promise.all(masters.map(redisCpu))).map((c, i) => c - (cpu0[i] ?? 0));
  for (const m of masters) m.disconnect();
  await drain.close();
  if (failed > 0) throw new Error(`${failed} of ${jobs} jobs failed on ${side.label}`);
  const redis = cpu.reduce((a, b) => a + b, 0);
  return { rate: jobs / seconds, nodeUs: (node.user + node.system) / jobs, redisUs: (redis * 1e6) / jobs, shares: cpu.map((c) => c / redis) };
}

