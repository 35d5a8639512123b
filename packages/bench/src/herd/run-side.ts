/**
 * One side of `pnpm bench:herd`: N schedules stored on a private redis-server, all due at the same UTC minute
 * F, the processes that run them started before F, then counted from F until every schedule has run (or the
 * deadline): each run's lag from F, how many times each schedule ran, and the CPU and Redis commands spent.
 */
import { Queue } from 'bullmq';
import { fileURLToPath } from 'node:url';
import { createLogger, createRedis, QueueSet } from '@tickwork/core';
import { createSchedules, SCHEDULE_SHARDS, shardKeys } from '@tickwork/schedules';
import type { LagReply } from '../schedules/lag-recorder.js';
import { catalog } from '../schedules/catalog.js';
import {
  msUntilOk,
  privateRedis,
  processCpuS,
  progress,
  redisCounters,
  runPool,
  sleep,
  startChild,
  type Child,
  type PrivateRedis,
} from '../schedules/harness.js';
import { dailyPatternAt, herdId, herdInput } from './input.js';
import { commandStats, mixLines, slowlogLines, startSlowlog, statLines, watchCommandMix } from './command-mix.js';

export interface HerdSettings {
  workerConcurrency: number;
  /** SCHEDULE_GRACE_MS for tickwork's scheduler and worker: a herd's tail must not be judged missed. */
  graceMs: number;
  /** How long after F the side may take to run every schedule. */
  deadlineMs: number;
  /** How far ahead of now F is put, for the stores and the starts. */
  leadMs: number;
  fillProcesses: number;
}

export interface HerdResult {
  system: 'tickwork' | 'bullmq';
  n: number;
  storeS: number;
  /** Lags from F, ms, ascending: one per run recorded. */
  lags: number[];
  /** Schedules that ran exactly once, more than once, never. */
  once: number;
  twice: number;
  never: number;
  /** tickwork: ms after F when the scheduler had claimed every schedule's F (its due entries moved on); negative: before F (added ahead). */
  addsDoneMs: number | null;
  /** tickwork: runs recorded by then (how fast the worker ran beside the scheduler's claims, and after them). */
  ranByAddsDone: number | null;
  /** ms after F when the last run was recorded (as the bench polls, every 100 ms). */
  doneMs: number | null;
  /** CPU seconds from 2 s before F until every run was recorded. */
  cpuS: { scheduler: number | null; worker: number; redis: number };
  /** The same from the processes' start: with a scheduler's adds ahead of F. */
  cpuSWhole: { scheduler: number | null; worker: number; redis: number };
  commands: number;
  /** BENCH_HERD_MIX=1: the top command shapes per occurrence. */
  mix?: string[];
  /** Redis's time per occurrence by command, most first (INFO commandstats). */
  redisTime: string[];
  /** BENCH_HERD_SLOWLOG=1: Redis's time per occurrence by command shape (SLOWLOG). */
  perShape?: string[];
  /**
   * How busy each process was from F until every run was recorded: CPU seconds per second of that span (1 =
   * one core saturated). A side whose processes all stay well below 1 waits on round trips rather than CPU.
   */
  busy: Busy | null;
  /** tickwork: the same, split at the moment the scheduler had claimed every occurrence (addsDoneMs), where it came after F. */
  busyClaiming: Busy | null;
  busyAfter: Busy | null;
}

export interface Busy {
  scheduler: number | null;
  worker: number;
  redis: number;
}

/** CPU of each process and of Redis at one moment, for the busy fractions. */
interface CpuMark {
  at: number;
  processes: number[];
  redis: number;
}

const here = (file: string) => fileURLToPath(new URL(file, import.meta.url));
const QUEUE = 'sched';

async function lagsOf(workers: Child[], from: number, withKeys: boolean): Promise<LagReply[]> {
  return Promise.all(
    workers.map(async (w) => (await (await fetch(`http://127.0.0.1:${w.lagPort}/lags?from=${from}&to=${from + 1}${withKeys ? '&keys=1' : ''}`)).json()) as LagReply),
  );
}

async function totalRuns(workers: Child[]): Promise<number> {
  const replies = await Promise.all(workers.map(async (w) => (await (await fetch(`http://127.0.0.1:${w.lagPort}/lags?from=0&to=0`)).json()) as LagReply));
  return replies.reduce((a, r) => a + r.total, 0);
}

/** The next whole UTC minute at least `leadMs` from now. */
export function herdMinute(leadMs: number): number {
  return Math.ceil((Date.now() + leadMs) / 60_000) * 60_000;
}

export async function runSide(system: 'tickwork' | 'bullmq', n: number, s: HerdSettings): Promise<HerdResult> {
  const at = herdMinute(s.leadMs);
  const pattern = dailyPatternAt(at);
  progress(`${system}, N=${n}: private Redis; ${n} schedules on "${pattern}" UTC, due at ${new Date(at).toISOString()}`);
  const redis = await privateRedis();
  const children: Child[] = [];
  try {
    const { storeS, processes, scheduler, addsDone } = system === 'bullmq' ? await bullmqSide(redis, n, pattern, s) : await tickworkSide(redis, n, pattern, s, at);
    children.push(...processes);
    const workers = processes.filter((c) => c.lagPort !== undefined);
    if (Date.now() > at - 3000) {
      throw new Error(`${system}: storing and starting took until ${new Date().toISOString()}, past the herd's minute less 3 s; raise BENCH_HERD_LEAD_S`);
    }
    // From the processes' start: a scheduler that adds ahead does its work before the minute.
    const cpuStart = processes.map((c) => processCpuS(c.pid));
    const redisStart = await redisCounters(redis.client);
    let addsDoneMs: number | null = null;
    let ranByAddsDone: number | null = null;
    while (Date.now() < at - 2000) {
      if (addsDone && addsDoneMs === null && (await addsDone(at))) {
        addsDoneMs = Date.now() - at;
        ranByAddsDone = 0;
      }
      await sleep(Math.min(100, Math.max(0, at - 2000 - Date.now())));
    }
    const cpu0 = processes.map((c) => processCpuS(c.pid));
    const redis0 = await redisCounters(redis.client);
    const stats0 = await commandStats(redis.client);
    const mix = process.env.BENCH_HERD_MIX === '1' ? await watchCommandMix(redis.url) : undefined;
    const slowlog = process.env.BENCH_HERD_SLOWLOG === '1';
    if (slowlog) await startSlowlog(redis.client);
    progress(`  waiting for the herd at ${new Date(at).toISOString()}`);
    let doneMs: number | null = null;
    const deadline = at + s.deadlineMs;
    let lastReport = Date.now();
    const mark = async (): Promise<CpuMark> => ({ at: Date.now(), processes: processes.map((c) => processCpuS(c.pid)), redis: (await redisCounters(redis.client)).cpuS });
    let fromF: CpuMark | undefined;
    let toDone: CpuMark | undefined;
    let claimsDone: CpuMark | undefined;
    for (;;) {
      if (!fromF && Date.now() >= at) fromF = await mark();
      const claimedAll = addsDone && addsDoneMs === null && Date.now() >= at && (await addsDone(at));
      if (claimedAll) {
        addsDoneMs = Date.now() - at;
        claimsDone = await mark();
      }
      const total = await totalRuns(workers);
      if (claimedAll) ranByAddsDone = total;
      if (total >= n) {
        doneMs = Date.now() - at;
        toDone = await mark();
      }
      if (total >= n || Date.now() > deadline) break;
      if (Date.now() - lastReport > 5000) {
        lastReport = Date.now();
        progress(`  ${total}/${n} ran`);
      }
      await sleep(100);
    }
    await sleep(3000); // a duplicate run would show in this time
    const cpu1 = processes.map((c) => processCpuS(c.pid));
    const redis1 = await redisCounters(redis.client);
    const stats1 = await commandStats(redis.client);
    const mixCounts = await mix?.stop();
    const perShape = slowlog ? await slowlogLines(redis.client, n) : undefined;
    const replies = await lagsOf(workers, at, true);
    const lags = replies.flatMap((r) => r.lags).sort((a, b) => a - b);
    const counts = new Uint8Array(n);
    for (const r of replies) for (const k of r.keys ?? []) if (k >= 0 && k < n) counts[k] = Math.min(255, (counts[k] ?? 0) + 1);
    let once = 0;
    let twice = 0;
    let never = 0;
    for (const c of counts) {
      if (c === 1) once++;
      else if (c === 0) never++;
      else twice++;
    }
    const cpuOf = (c: Child | undefined, from = cpu0) => (c === undefined ? null : (cpu1[processes.indexOf(c)] ?? 0) - (from[processes.indexOf(c)] ?? 0));
    const workerCpu = workers.reduce((a, w) => a + (cpuOf(w) ?? 0), 0);
    const busyOf = (a: CpuMark | undefined, b: CpuMark | undefined) => (a && b && b.at - a.at >= 1000 ? busyBetween(a, b, processes, workers, scheduler) : null);
    return {
      system,
      n,
      storeS,
      lags,
      once,
      twice,
      never,
      addsDoneMs,
      ranByAddsDone,
      doneMs,
      cpuS: { scheduler: cpuOf(scheduler), worker: workerCpu, redis: redis1.cpuS - redis0.cpuS },
      cpuSWhole: { scheduler: cpuOf(scheduler, cpuStart), worker: workers.reduce((a, w) => a + (cpuOf(w, cpuStart) ?? 0), 0), redis: redis1.cpuS - redisStart.cpuS },
      commands: redis1.commands - redis0.commands,
      redisTime: statLines(stats0, stats1, n),
      busy: busyOf(fromF, toDone),
      busyClaiming: busyOf(fromF, claimsDone),
      busyAfter: busyOf(claimsDone, toDone),
      ...(perShape && { perShape }),
      ...(mixCounts && { mix: mixLines(mixCounts, n) }),
    };
  } finally {
    await Promise.all(children.map((c) => c.stop()));
    await redis.stop();
  }
}

/** CPU seconds per second between two marks: the workers summed, the scheduler, Redis. */
function busyBetween(a: CpuMark, b: CpuMark, processes: Child[], workers: Child[], scheduler: Child | undefined): Busy {
  const s = (b.at - a.at) / 1000;
  const of = (c: Child) => ((b.processes[processes.indexOf(c)] ?? 0) - (a.processes[processes.indexOf(c)] ?? 0)) / s;
  return { scheduler: scheduler ? of(scheduler) : null, worker: workers.reduce((x, w) => x + of(w), 0), redis: (b.redis - a.redis) / s };
}

interface Started {
  storeS: number;
  processes: Child[];
  scheduler?: Child;
  addsDone?: (at: number) => Promise<boolean>;
}

async function bullmqSide(redis: PrivateRedis, n: number, pattern: string, s: HerdSettings): Promise<Started> {
  const queue = new Queue(QUEUE, { connection: redis.client, prefix: 'bull' });
  try {
    const storeS = await runPool(n, 128, 'BullMQ upserts', (i) => queue.upsertJobScheduler(`s-${i}`, { pattern, tz: 'UTC' }, { name: 'bench.tick', data: { i } }));
    const worker = await startChild(here('../schedules/bullmq-worker.js'), { REDIS_URL: redis.url, BENCH_QUEUE: QUEUE, BENCH_CONCURRENCY: String(s.workerConcurrency) }, { lagPort: true });
    await worker.app.waitForLog((l) => l.msg === 'bullmq worker ready', 'the BullMQ worker to start', 60_000);
    return { storeS, processes: [worker] };
  } finally {
    await queue.close();
  }
}

async function tickworkSide(redis: PrivateRedis, n: number, pattern: string, s: HerdSettings, at: number): Promise<Started> {
  const prefix = 'tw';
  const command = createRedis(redis.url, 'command');
  const queues = new QueueSet(command, prefix, createLogger('bench', 'silent'));
  const storeS = await storeTickwork(redis.url, command, queues, n, pattern, s);
  await queues.close();
  const env = { REDIS_URL: redis.url, QUEUE_PREFIX: prefix, JOBS_MODULE: here('../schedules/catalog.js'), SCHEDULE_GRACE_MS: String(s.graceMs) };
  const worker = await startChild('worker', { ...env, WORKER_CONCURRENCY: String(s.workerConcurrency) }, { lagPort: true });
  const scheduler = await startChild('scheduler', { ...env, ...(process.env.SCHEDULE_BATCH_MAX && { SCHEDULE_BATCH_MAX: process.env.SCHEDULE_BATCH_MAX }) });
  await Promise.all([msUntilOk(worker, '/readyz', 120_000), msUntilOk(scheduler, '/readyz', 120_000)]);
  // Every schedule's due entry moves past F once the scheduler has added (or recorded) its occurrence.
  const addsDone = async (): Promise<boolean> => {
    const pipeline = command.pipeline();
    for (let k = 0; k < SCHEDULE_SHARDS; k++) pipeline.zcount(shardKeys(prefix, k).due, '-inf', at);
    const replies = (await pipeline.exec()) ?? [];
    return replies.every(([err, count]) => !err && Number(count) === 0);
  };
  return { storeS, processes: [worker, scheduler], scheduler, addsDone: async () => addsDone().catch(() => false) };
}

async function storeTickwork(url: string, command: ReturnType<typeof createRedis>, queues: QueueSet, n: number, pattern: string, s: HerdSettings): Promise<number> {
  const schedules = createSchedules({ redis: command, queues, catalog, log: createLogger('bench', 'silent') });
  const started = performance.now();
  const inProcess = Math.min(n, 100_000);
  await runPool(inProcess, 128, 'tickwork upserts', (i) => schedules.upsert(herdId(i), herdInput(pattern, i)));
  if (inProcess < n) {
    const per = Math.ceil((n - inProcess) / s.fillProcesses);
    const fills: Child[] = [];
    for (let from = inProcess; from < n; from += per) {
      fills.push(await startChild(here('./fill.js'), { REDIS_URL: url, QUEUE_PREFIX: 'tw', BENCH_FROM: String(from), BENCH_TO: String(Math.min(n, from + per)), BENCH_HERD_PATTERN: pattern }));
    }
    const codes = await Promise.all(fills.map((f) => f.app.exited));
    if (codes.some((c) => c !== 0)) throw new Error(`a fill process failed: ${fills.map((f) => f.app.lines.slice(-5).join('\n')).join('\n')}`);
  }
  const stored = await schedules.count({ source: 'runtime' });
  if (stored !== n) throw new Error(`tickwork: expected ${n} runtime schedules, found ${stored}`);
  return (performance.now() - started) / 1000;
}
