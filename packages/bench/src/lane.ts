/**
 * The scheduled-lane section of `pnpm bench` (issue 13, target 3): an every-second schedule on a queue
 * that always has at least 20,000 no-op jobs waiting. tickwork: a runtime schedule fired by the stock
 * scheduler (each occurrence added its head start, 50 ms by default or BENCH_LANE_HEAD_START_MS, before its
 * time and held by the worker until then) into the stock worker (concurrency 50); BullMQ: a job scheduler (`every: 1000`) into a bare
 * Worker (concurrency 50), each on its own private Redis. For each, BENCH_LANE_SECONDS (default 45) with
 * the queue idle, then as long with a producer keeping the backlog at 20,000 or more; the lag of each
 * occurrence (handler start - nominal time) is recorded in the worker's memory (schedules/lag-recorder.ts).
 * tickwork runs twice: as it fires an every-second schedule (at its time, within the look-ahead), and with
 * each occurrence added ahead (a 300 ms look-ahead and a 1 s add-ahead window: added as a delayed job and
 * lifted to the head of the wait list at its head start before its time, as a daily schedule's is).
 * Targets, for both: tickwork p99 <= 100 ms behind the backlog, <= 20 ms idle.
 */
import { createLogger, createRedis, QueueSet } from '@tickwork/core';
import { createSchedules, DEFAULT_HEAD_START_MS } from '@tickwork/schedules';
import { Queue } from 'bullmq';
import { fileURLToPath } from 'node:url';
import type { RedisClient } from '@tickwork/core';
import { benchTick, catalog } from './schedules/catalog.js';
import { cleanupAll, msUntilOk, percentile, privateRedis, sleep, startChild, type Child } from './schedules/harness.js';
import type { LagReply } from './schedules/lag-recorder.js';

const SECONDS = Number(process.env.BENCH_LANE_SECONDS ?? 45);
/** The stock scheduler's SCHEDULE_HEAD_START_MS (BENCH_LANE_HEAD_START_MS; its default unless set). */
const HEAD_START_MS = process.env.BENCH_LANE_HEAD_START_MS ?? String(DEFAULT_HEAD_START_MS);
const BACKLOG = 20_000;
const IDLE_P99_MS = 20;
const BACKLOG_P99_MS = 100;
const here = (file: string) => fileURLToPath(new URL(file, import.meta.url));

interface Lags {
  n: number;
  p50: number;
  p99: number;
  max: number;
  /** The smallest number of jobs seen waiting during the window (backlog phase). */
  minWaiting?: number;
}

/**
 * Jobs per addBulk of the backlog's producer. An addBulk is one MULTI, which Redis runs as a whole while
 * every other client waits: 5,000 at once held Redis for about 100 ms on this machine (more when it is
 * busy), so an occurrence added or fetched meanwhile waited for the producer, not for the backlog. Chunks
 * of 500 (as a producer adding jobs as they come would) keep that wait to a few ms.
 */
const CHUNK = 500;

/**
 * Keeps at least BACKLOG no-op jobs waiting in `queue` until stopped; reports the lowest count it saw
 * since `measure()` (called once the backlog is built and the window opens).
 */
function keepBacklog(queue: Queue, name: string): { built: Promise<void>; measure: () => void; stop: () => Promise<number> } {
  let running = true;
  let min = Number.POSITIVE_INFINITY;
  let measuring = false;
  let markBuilt!: () => void;
  const built = new Promise<void>((resolve) => (markBuilt = resolve));
  const loop = (async () => {
    while (running) {
      const waiting = await queue.getWaitingCount();
      if (waiting >= BACKLOG) markBuilt();
      if (measuring) min = Math.min(min, waiting);
      if (waiting < BACKLOG + 10_000) {
        await queue.addBulk(Array.from({ length: CHUNK }, () => ({ name, data: {}, opts: { removeOnComplete: true, removeOnFail: true } })));
      } else await sleep(20);
    }
  })();
  void loop.then(markBuilt, markBuilt); // a failed producer ends the wait; stop() reports its error
  return {
    built,
    measure: () => {
      measuring = true;
    },
    stop: async () => {
      running = false;
      await loop;
      return min;
    },
  };
}

/** Lags of the occurrences due in the window, from the worker's lag recorder. */
async function window(worker: Child, seconds: number, during?: () => ReturnType<typeof keepBacklog>): Promise<Lags> {
  const load = during?.();
  if (load) await load.built; // the backlog is built before the window opens
  load?.measure();
  const t0 = Date.now();
  await sleep(seconds * 1000);
  const t1 = Date.now();
  const minWaiting = load ? await load.stop() : undefined;
  await sleep(1500);
  const reply = (await (await fetch(`http://127.0.0.1:${worker.lagPort}/lags?from=${t0}&to=${t1}`)).json()) as LagReply;
  const lags = [...reply.lags].sort((a, b) => a - b);
  return { n: lags.length, p50: percentile(lags, 0.5), p99: percentile(lags, 0.99), max: lags.at(-1) ?? NaN, ...(minWaiting !== undefined && { minWaiting }) };
}

/** The scheduler's settings that add each every-second occurrence ahead (SCHEDULE_ADD_AHEAD_MS). */
const ADDED_AHEAD = { SCHEDULE_LOOKAHEAD_MS: '300', SCHEDULE_ADD_AHEAD_MS: '1000' };

async function tickworkSide(schedulerEnv: Record<string, string> = {}): Promise<{ idle: Lags; backlog: Lags }> {
  const redis = await privateRedis();
  const command = createRedis(redis.url, 'command');
  const queues = new QueueSet(command, 'tw', createLogger('bench', 'silent'));
  try {
    const env = { REDIS_URL: redis.url, QUEUE_PREFIX: 'tw', JOBS_MODULE: here('./schedules/catalog.js') };
    const worker = await startChild('worker', { ...env, WORKER_CONCURRENCY: '50' }, { lagPort: true });
    await msUntilOk(worker, '/readyz', 60_000);
    await createSchedules({ redis: command, queues, catalog }).upsert('lane:tick', { job: benchTick, every: { seconds: 1 }, tz: 'UTC', data: { i: 0 } });
    const scheduler = await startChild('scheduler', { ...env, SCHEDULE_HEAD_START_MS: HEAD_START_MS, ...schedulerEnv });
    await msUntilOk(scheduler, '/readyz', 60_000);
    await sleep(3000);
    const idle = await window(worker, SECONDS);
    const backlog = await window(worker, SECONDS, () => keepBacklog(queues.get('sched'), 'bench.noop'));
    return { idle, backlog };
  } finally {
    await queues.close();
    command.disconnect();
  }
}

async function bullmqSide(): Promise<{ idle: Lags; backlog: Lags }> {
  const redis = await privateRedis();
  const connection: RedisClient = createRedis(redis.url, 'command');
  const queue = new Queue('sched', { connection });
  try {
    const worker = await startChild(here('./schedules/bullmq-worker.js'), { REDIS_URL: redis.url, BENCH_QUEUE: 'sched', BENCH_CONCURRENCY: '50' }, { lagPort: true });
    await worker.app.waitForLog((l) => l.msg === 'bullmq worker ready', 'bullmq worker ready', 60_000);
    await queue.upsertJobScheduler('lane-tick', { every: 1000 }, { name: 'bench.tick', data: { i: 0 } });
    await sleep(3000);
    const idle = await window(worker, SECONDS);
    const backlog = await window(worker, SECONDS, () => keepBacklog(queue, 'bench.noop'));
    return { idle, backlog };
  } finally {
    await queue.close();
    connection.disconnect();
  }
}

const fmt = (l: Lags) =>
  `${String(l.n).padStart(3)} runs, p50 ${l.p50.toFixed(0).padStart(5)} ms, p99 ${l.p99.toFixed(0).padStart(5)} ms, max ${l.max.toFixed(0).padStart(5)} ms` +
  (l.minWaiting === undefined ? '' : `, at least ${l.minWaiting} jobs waiting`);

/** Runs both sides and prints the section with its verdicts. */
export async function laneSection(out: (s: string) => void): Promise<void> {
  out(`\nscheduled lane: an every-second schedule, ${SECONDS} s idle then ${SECONDS} s behind >= ${BACKLOG} waiting no-op jobs (worker concurrency 50; tickwork's head start ${HEAD_START_MS} ms)\n`);
  try {
    const tw = await tickworkSide();
    await cleanupAll();
    const ahead = await tickworkSide(ADDED_AHEAD);
    await cleanupAll();
    const bull = await bullmqSide();
    out(`  tickwork idle     ${fmt(tw.idle)}\n  tickwork backlog  ${fmt(tw.backlog)}\n`);
    out(`  tickwork, added ahead: idle     ${fmt(ahead.idle)}\n  tickwork, added ahead: backlog  ${fmt(ahead.backlog)}\n`);
    out(`  bullmq   idle     ${fmt(bull.idle)}\n  bullmq   backlog  ${fmt(bull.backlog)}\n`);
    for (const [name, side] of [['tickwork', tw], ['tickwork added ahead', ahead]] as const) {
      out(`  target: ${name} p99 <= ${IDLE_P99_MS} ms idle (${side.idle.p99.toFixed(0)} ms): ${side.idle.p99 <= IDLE_P99_MS ? 'MET' : 'NOT MET'}\n`);
      out(`  target: ${name} p99 <= ${BACKLOG_P99_MS} ms behind the backlog (${side.backlog.p99.toFixed(0)} ms): ${side.backlog.p99 <= BACKLOG_P99_MS ? 'MET' : 'NOT MET'}\n`);
    }
  } finally {
    await cleanupAll();
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  laneSection((s) => process.stdout.write(s)).then(
    () => process.exit(0),
    (err: unknown) => {
      process.stderr.write(`lane bench failed: ${(err as Error).stack ?? String(err)}\n`);
      process.exit(1);
    },
  );
}
