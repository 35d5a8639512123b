import { fileURLToPath } from 'node:url';
import { createLogger, createRedis, QueueSet, type OverlapPolicy } from '@tickwork/core';
import { createSchedules, readHistory } from '@tickwork/schedules';
import { OverlapGuard } from '@tickwork/exactly-once';
import { freePort, startApp, startRedisServer, waitFor, type AppProcess, type RedisServerHandle } from '@tickwork/testkit';
import { Queue } from 'bullmq';
import type { Redis } from 'ioredis';
import type { RedisClient } from '@tickwork/core';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { catalog, FX_KEYS, fxOverlapRuntime } from './testing/exactly-once-fixtures.js';
import { readMetric } from './testing/read-metric.js';

const WORKER = fileURLToPath(new URL('../dist/main.js', import.meta.url));
const SCHEDULER = fileURLToPath(new URL('../../scheduler/dist/main.js', import.meta.url));
const FIXTURES = fileURLToPath(new URL('../dist/testing/exactly-once-fixtures.js', import.meta.url));
const POLICIES: OverlapPolicy[] = ['skip', 'buffer-one', 'allow'];
const PREFIX = 'tickwork';

let server: RedisServerHandle;
let redis: Redis;
let queue: Queue;
let queueConnection: RedisClient;
let worker: AppProcess;
let scheduler: AppProcess;
let port: number;

interface RunRecord {
  key: string;
  nominal: number;
  start: number;
  end: number;
}

/** Each policy twice: a catalog schedule (id = job name) and a runtime schedule firing the same handler. */
type Kind = 'catalog' | 'runtime';
const KINDS: Kind[] = ['catalog', 'runtime'];
const scheduleOf = (kind: Kind) => (policy: OverlapPolicy) => (kind === 'catalog' ? `fx.overlap-${policy}` : `rt:overlap-${policy}`);
const runsIn = async (id: string) =>
  (await redis.lrange(FX_KEYS.runs(id), 0, -1))
    .map((r) => JSON.parse(r) as RunRecord)
    .sort((a, b) => a.start - b.start);

const overlapping = (runs: RunRecord[]) => runs.some((r, i) => runs.slice(i + 1).some((o) => o.start < r.end));

beforeAll(async () => {
  server = await startRedisServer();
  redis = server.client();
  queueConnection = createRedis(server.url, 'command');
  queue = new Queue('fxoverlap', { connection: queueConnection, prefix: PREFIX });
  port = await freePort();
  worker = startApp(WORKER, {
    REDIS_URL: server.url,
    JOBS_MODULE: FIXTURES,
    WORKER_QUEUES: 'fxoverlap',
    WORKER_CONCURRENCY: '20',
    PORT: String(port),
  });
  await worker.waitForLog((l) => l.msg === 'worker ready', 'worker ready', 30_000);
}, 30_000);

afterAll(async () => {
  await scheduler?.stop('SIGKILL');
  await worker?.stop('SIGKILL');
  await queue?.close();
  queueConnection?.disconnect(); // BullMQ does not close a connection it was given
  await server?.stop();
});

it('the scheduler fires every second, the handler takes 3 s: skip, buffer-one and allow, for catalog and runtime schedules', async () => {
  const schedules = createSchedules({ redis, queues: new QueueSet(redis, PREFIX, createLogger('test', 'silent')), catalog });
  for (const policy of POLICIES) await schedules.upsert(scheduleOf('runtime')(policy), { job: fxOverlapRuntime, every: { seconds: 1 }, tz: 'UTC', overlap: policy, history: 500 }); // every occurrence of the window stays in the history, as a catalog schedule's does
  // A real scheduler process computes and enqueues the occurrences, as in production; the three schedules
  // run side by side in one worker, so the test takes one window, not three.
  scheduler = startApp(SCHEDULER, {
    REDIS_URL: server.url,
    JOBS_MODULE: FIXTURES,
    PORT: String(await freePort()),
    SCHEDULE_TICK_MS: '200',
    SCHEDULE_LOOKAHEAD_MS: '0',
  });
  await scheduler.waitForLog((l) => l.msg === 'scheduler ready', 'scheduler ready', 30_000);
  const enough = async (kind: Kind) => (await runsIn(scheduleOf(kind)('skip'))).length >= 2 && (await runsIn(scheduleOf(kind)('buffer-one'))).length >= 3;
  await waitFor(async () => (await enough('catalog')) && (await enough('runtime')), {
    timeoutMs: 40_000,
    what: 'two finished runs under skip and three under buffer-one',
  });
  await scheduler.stop('SIGTERM');
  // Let the occurrences already enqueued finish, so counts below are final.
  await waitFor(
    async () => {
      return (await queue.getJobCountByTypes('active', 'waiting', 'delayed', 'prioritized')) === 0;
    },
    { timeoutMs: 30_000, what: 'queue drained' },
  );

  const guard = new OverlapGuard(redis, { prefix: PREFIX, leaseMs: 30_000 });
  for (const kind of KINDS) {
    const schedule = scheduleOf(kind);
    const runsOf = (policy: OverlapPolicy) => runsIn(schedule(policy));
    const skipsOf = (policy: OverlapPolicy) => guard.skips(schedule(policy), 1000);
    const metric = (policy: OverlapPolicy) => readMetric(port, 'tickwork_overlap_skipped_total', { schedule: schedule(policy), policy });
    const historyOf = (policy: OverlapPolicy) => readHistory(redis, PREFIX, schedule(policy), 500);

    for (const policy of POLICIES) {
      const runs = await runsOf(policy);
      const skips = await skipsOf(policy);
      // Every run is a scheduler occurrence (key `<schedule>@<nominal ISO>`), each at most once.
      for (const r of runs) expect(r.key).toBe(`${schedule(policy)}@${new Date(r.nominal).toISOString()}`);
      expect(new Set(runs.map((r) => r.key)).size).toBe(runs.length);
      // Nothing silently lost: each occurrence the scheduler enqueued either ran (completed) or was skipped,
      // and the history's skipped-overlap records are exactly the overlap skip list.
      const history = await historyOf(policy);
      const enqueued = history.filter((h) => h.enqueuedAt);
      expect(enqueued.length).toBeGreaterThanOrEqual(runs.length);
      for (const h of enqueued) expect(['completed', 'skipped-overlap'], h.id).toContain(h.outcome);
      expect(history.filter((h) => h.outcome === 'completed').map((h) => h.id).sort()).toEqual(runs.map((r) => r.key).sort());
      expect(history.filter((h) => h.outcome === 'skipped-overlap').map((h) => h.id).sort()).toEqual(skips.map((s) => s.idempotencyKey).sort());
      expect(await metric(policy)).toBe(skips.length);
    }

    // skip: runs never overlap; occurrences due during a run are recorded as skipped, not run later.
    const skipRuns = await runsOf('skip');
    const skipSkips = await skipsOf('skip');
    expect(overlapping(skipRuns)).toBe(false);
    expect(skipSkips.length).toBeGreaterThanOrEqual(2);
    const ranKeys = new Set(skipRuns.map((r) => r.key));
    for (const s of skipSkips) {
      expect(ranKeys.has(s.idempotencyKey)).toBe(false);
      expect(ranKeys.has(s.runningKey)).toBe(true);
    }
    expect(
      worker.logs().some((l) => l.msg === 'occurrence skipped: the previous run of the schedule is still running' && l.schedule === schedule('skip')),
    ).toBe(true);

    // buffer-one: runs never overlap; the buffered occurrence starts as soon as the previous ends (well before
    // its next occurrence would have), and the surplus ones are recorded as skipped.
    const bufRuns = await runsOf('buffer-one');
    expect(overlapping(bufRuns)).toBe(false);
    let buffered = 0;
    for (let i = 1; i < bufRuns.length; i++) {
      const prev = bufRuns[i - 1] as RunRecord;
      const cur = bufRuns[i] as RunRecord;
      // It waited for the previous run, not for a slot far later (the bound is loose for loaded CI machines).
      expect(cur.start - prev.end).toBeLessThan(3000);
      // Due while the previous one was running, it waited and ran rather than being skipped. Not every pair
      // shows it: the slot is freed by the previous run's end record, a moment after its handler returns
      // (`prev.end`), and on a loaded machine an occurrence due in that moment is the one that waits.
      if (cur.nominal < prev.end) buffered++;
    }
    expect(buffered).toBeGreaterThanOrEqual(1);
    expect((await skipsOf('buffer-one')).length).toBeGreaterThanOrEqual(1);

    // allow: occurrences run concurrently; nothing is skipped.
    const allowRuns = await runsOf('allow');
    expect(allowRuns.length).toBeGreaterThan(skipRuns.length);
    expect(overlapping(allowRuns)).toBe(true);
    expect(await skipsOf('allow')).toEqual([]);
    expect(await metric('allow')).toBe(0);
  }
}, 120_000);
