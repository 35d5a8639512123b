/**
 * The tickwork side: N runtime schedules upserted through the schedule API (`createSchedules`, contract in
 * packages/runtime/src/schedules/api.ts) on their own private Redis, then the stock worker process(es) and
 * the stock scheduler process, once per replica count (e.g. 1, then 3 started at once), on a bench catalog.
 */
import { createLogger, createRedis, QueueSet } from '@tickwork/core';
import { createSchedules, type Schedules } from '@tickwork/schedules';
import { fileURLToPath } from 'node:url';
import { benchTick, catalog } from './catalog.js';
import { fireWindow, msUntilOk, privateRedis, progress, runPool, settledMemory, sleep, startChild, type Child } from './harness.js';
import type { BenchSettings, FireRow, SideResult } from './side.js';
import type { Spread } from './spread.js';
import { scheduleId, tickworkInput } from './tickwork-input.js';

const PREFIX = 'tw';
const WARM = 64;
const here = (file: string) => fileURLToPath(new URL(file, import.meta.url));

export async function runTickwork(n: number, spread: Spread, replicaCounts: number[], s: BenchSettings): Promise<SideResult> {
  progress(`tickwork, N=${n}: private Redis, ${n} runtime schedules (${spread.describe})`);
  const redis = await privateRedis();
  const command = createRedis(redis.url, 'command');
  const queues = new QueueSet(command, PREFIX, createLogger('bench', 'silent'));
  const children: Child[] = [];
  try {
    const schedules = createSchedules({ redis: command, queues, catalog, log: createLogger('bench', 'silent') });
    // Scripts loaded and shard records made before the baseline; a daily schedule never fires in the window.
    for (let i = 0; i < WARM; i++) await schedules.upsert(`warm:${i}`, { job: benchTick, tz: 'UTC', data: { i }, every: { days: 1 } });
    const baseline = await settledMemory(redis.client);
    const { upsertsPerS, upsertNote } = await store(schedules, redis.url, n, spread, s);
    const stored = await schedules.count({ source: 'runtime' });
    if (stored !== n + WARM) throw new Error(`tickwork: expected ${n + WARM} runtime schedules, found ${stored}`);
    const bytesPerSchedule = ((await settledMemory(redis.client)) - baseline) / n;
    progress(`  ${upsertsPerS.toFixed(0)} upserts/s, ${bytesPerSchedule.toFixed(0)} bytes per schedule at rest; starting ${s.workers} worker(s)`);

    const env = { REDIS_URL: redis.url, QUEUE_PREFIX: PREFIX, JOBS_MODULE: here('./catalog.js') };
    const workers: Child[] = [];
    for (let w = 0; w < s.workers; w++) {
      const worker = await startChild('worker', { ...env, WORKER_CONCURRENCY: String(s.workerConcurrency) }, { lagPort: true });
      workers.push(worker);
      children.push(worker);
    }
    for (const w of workers) await msUntilOk(w, '/readyz', 60_000);

    const rows: FireRow[] = [];
    for (const replicas of replicaCounts) {
      progress(`  ${replicas} scheduler(s) starting over ${n} stored schedules`);
      const schedulers = await Promise.all(Array.from({ length: replicas }, () => startChild('scheduler', env)));
      children.push(...schedulers);
      const startMs = Math.max(...(await Promise.all(schedulers.map((c) => msUntilOk(c, '/readyz')))));
      progress(`  ready in ${startMs.toFixed(0)} ms; warming up ${s.warmupSeconds} s, then firing for ${s.fireSeconds} s`);
      await sleep(s.warmupSeconds * 1000);
      const fire = await fireWindow({
        redis: redis.client,
        schedulers,
        workers,
        seconds: s.fireSeconds,
        graceMs: 3000,
        schedules: n,
        baselineMemory: baseline,
        dueIn: spread.dueIn,
      });
      progress(`  p99 lag ${fire.lag.p99.toFixed(0)} ms, ${fire.ran}/${fire.due.toFixed(0)} ran`);
      rows.push({ replicas, startMs, fire });
      await Promise.all(schedulers.map((c) => c.stop()));
    }
    return { system: 'tickwork', n, upsertsPerS, ...(upsertNote && { upsertNote }), bytesPerSchedule, rows };
  } finally {
    await Promise.all(children.map((c) => c.stop()));
    await queues.close();
    command.disconnect();
    await redis.stop();
  }
}

/**
 * Stores the N schedules. The first `timedUpserts` go through the API from this process: that is the
 * upserts/s figure. Any beyond go through the same API from `fillProcesses` processes at once, so a large N
 * does not take an hour when upserts are slow; the output says so.
 */
async function store(schedules: Schedules, url: string, n: number, spread: Spread, s: BenchSettings): Promise<{ upsertsPerS: number; upsertNote?: string }> {
  const timed = Math.min(n, s.timedUpserts);
  const seconds = await runPool(timed, s.concurrency, 'tickwork upserts', (i) => schedules.upsert(scheduleId(i), tickworkInput(spread, i)));
  const upsertsPerS = timed / seconds;
  if (timed === n) return { upsertsPerS };
  progress(`  ${upsertsPerS.toFixed(0)} upserts/s over the first ${timed}; the other ${n - timed} by ${s.fillProcesses} fill processes`);
  const started = performance.now();
  const per = Math.ceil((n - timed) / s.fillProcesses);
  const fills: Child[] = [];
  for (let from = timed; from < n; from += per) {
    fills.push(
      await startChild(here('./fill.js'), {
        REDIS_URL: url,
        QUEUE_PREFIX: PREFIX,
        BENCH_N: String(n),
        BENCH_SPREAD: spread.mode,
        BENCH_FROM: String(from),
        BENCH_TO: String(Math.min(n, from + per)),
        BENCH_UPSERT_CONCURRENCY: String(s.concurrency),
      }),
    );
  }
  const codes = await Promise.all(fills.map((f) => f.app.exited));
  if (codes.some((c) => c !== 0)) throw new Error(`a fill process failed: ${fills.map((f) => f.app.lines.slice(-5).join('\n')).join('\n')}`);
  const fillRate = (n - timed) / ((performance.now() - started) / 1000);
  return {
    upsertsPerS,
    upsertNote: `upserts/s timed over the first ${timed} upserts (one process); the other ${n - timed} were upserted through the same API by ${fills.length} processes at once, ${fillRate.toFixed(0)}/s together`,
  };
}
