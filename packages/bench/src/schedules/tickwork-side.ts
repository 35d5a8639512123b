/**
 * The tickwork side: N runtime schedules upserted through the schedule API (`createSchedules`, contract in
 * packages/runtime/src/schedules/api.ts) on their own private Redis, then the stock worker process(es) and
 * the stock scheduler process, once per replica count (1, then 3 started at once), on a bench catalog.
 */
import * as runtime from '@tickwork/runtime';
import { createLogger, createRedis, QueueSet, type Catalog } from '@tickwork/runtime';
import type { Redis } from 'ioredis';
import { fileURLToPath } from 'node:url';
import { benchTick, catalog } from './catalog.js';
import { fireWindow, msUntilOk, privateRedis, progress, runPool, settledMemory, sleep, startChild, type Child } from './harness.js';
import type { BenchSettings, FireRow, SideResult } from './side.js';
import type { Spread } from './spread.js';

const PREFIX = 'tw';
const WARM = 64;
const CATALOG_MODULE = fileURLToPath(new URL('./catalog.js', import.meta.url));

/** The slice of the schedule API the bench calls (api.ts's `Schedules`). */
interface SchedulesApi {
  upsert(id: string, input: Record<string, unknown>): Promise<unknown>;
  count(query?: { source?: 'catalog' | 'runtime' }): Promise<number>;
}
type CreateSchedules = (deps: { redis: Redis; prefix: string; catalog: Catalog; queues: QueueSet }) => SchedulesApi;

/** Looked up at run time until the engine's `createSchedules` is exported by @tickwork/runtime. */
function createSchedulesFn(): CreateSchedules {
  const fn = (runtime as unknown as Record<string, unknown>).createSchedules;
  if (typeof fn !== 'function') throw new Error('@tickwork/runtime exports no createSchedules yet (the schedule engine has not landed)');
  return fn as CreateSchedules;
}

/** Schedule i's timing as the API takes it (spread.ts decides the phase). */
function timingOf(spread: Spread, i: number): Record<string, unknown> {
  const t = spread.tickwork(i);
  if ('pattern' in t) return { pattern: t.pattern };
  return { every: t.every, offset: { milliseconds: t.offsetMs } };
}

export async function runTickwork(n: number, spread: Spread, replicaCounts: number[], s: BenchSettings): Promise<SideResult> {
  progress(`tickwork, N=${n}: private Redis, ${n} runtime schedules (${spread.describe})`);
  const redis = await privateRedis();
  const command = createRedis(redis.url, 'command');
  const queues = new QueueSet(command, PREFIX, createLogger('bench', 'silent'));
  const children: Child[] = [];
  try {
    const schedules = createSchedulesFn()({ redis: command, prefix: PREFIX, catalog, queues });
    // Scripts loaded and counters made before the baseline; a daily schedule never fires in the window.
    for (let i = 0; i < WARM; i++) await schedules.upsert(`warm:${i}`, { job: benchTick, tz: 'UTC', data: { i }, every: { days: 1 } });
    const baseline = await settledMemory(redis.client);
    const seconds = await runPool(n, s.concurrency, 'tickwork upserts', (i) =>
      schedules.upsert(`u:${i}`, { job: benchTick, tz: 'UTC', data: { i }, ...timingOf(spread, i) }),
    );
    const stored = await schedules.count({ source: 'runtime' });
    if (stored !== n + WARM) throw new Error(`tickwork: expected ${n + WARM} runtime schedules, found ${stored}`);
    const bytesPerSchedule = ((await settledMemory(redis.client)) - baseline) / n;
    progress(`  ${(n / seconds).toFixed(0)} upserts/s, ${bytesPerSchedule.toFixed(0)} bytes per schedule at rest; starting ${s.workers} worker(s)`);

    const env = { REDIS_URL: redis.url, QUEUE_PREFIX: PREFIX, JOBS_MODULE: CATALOG_MODULE };
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
    return { system: 'tickwork', n, upsertsPerS: n / seconds, bytesPerSchedule, rows };
  } finally {
    await Promise.all(children.map((c) => c.stop()));
    await queues.close();
    command.disconnect();
    await redis.stop();
  }
}
