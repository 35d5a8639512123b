import { fileURLToPath } from 'node:url';
import { createRedis, OverlapGuard, type OverlapPolicy } from '@tickwork/runtime';
import { freePort, startApp, startRedisServer, waitFor, type AppProcess, type RedisServerHandle } from '@tickwork/testkit';
import { Queue } from 'bullmq';
import type { Redis } from 'ioredis';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { FX_KEYS } from './testing/exactly-once-fixtures.js';
import { readMetric } from './testing/read-metric.js';

const WORKER = fileURLToPath(new URL('../dist/main.js', import.meta.url));
const FIXTURES = fileURLToPath(new URL('../dist/testing/exactly-once-fixtures.js', import.meta.url));
const POLICIES: OverlapPolicy[] = ['skip', 'buffer-one', 'allow'];

let server: RedisServerHandle;
let redis: Redis;
let queue: Queue;
let worker: AppProcess;
let port: number;

interface RunRecord {
  key: string;
  nominal: number;
  start: number;
  end: number;
}

const runsOf = async (policy: OverlapPolicy) =>
  (await redis.lrange(FX_KEYS.runs(`fx.overlap-${policy}`), 0, -1))
    .map((r) => JSON.parse(r) as RunRecord)
    .sort((a, b) => a.start - b.start);

const overlapping = (runs: RunRecord[]) => runs.some((r, i) => runs.slice(i + 1).some((o) => o.start < r.end));

beforeAll(async () => {
  server = await startRedisServer();
  redis = server.client();
  queue = new Queue('fxoverlap', { connection: createRedis(server.url, 'command'), prefix: 'tickwork' });
  port = await freePort();
  worker = startApp(WORKER, {
    REDIS_URL: server.url,
    JOBS_MODULE: FIXTURES,
    WORKER_QUEUES: 'fxoverlap',
    WORKER_CONCURRENCY: '10',
    PORT: String(port),
  });
  await worker.waitForLog((l) => l.msg === 'worker ready', 'worker ready', 30_000);
}, 30_000);

afterAll(async () => {
  await worker?.stop('SIGKILL');
  await queue?.close();
  await server?.stop();
});

it('a schedule firing every second with a 3 s handler: skip, buffer-one and allow', async () => {
  // The three schedules run side by side in one worker, so the test takes one window, not three.
  for (const policy of POLICIES) {
    await queue.upsertJobScheduler(`fx.overlap-${policy}`, { every: 1000 }, { name: `fx.overlap-${policy}`, data: {} });
  }
  await waitFor(
    async () => (await runsOf('skip')).length >= 2 && (await runsOf('buffer-one')).length >= 2,
    { timeoutMs: 40_000, what: 'two finished runs under skip and buffer-one' },
  );
  for (const policy of POLICIES) await queue.removeJobScheduler(`fx.overlap-${policy}`);
  // Let the occurrences already enqueued finish, so counts below are final.
  await waitFor(async () => {
    const c = await queue.getJobCounts('active', 'waiting', 'delayed', 'prioritized');
    return c.active + c.waiting + c.delayed + c.prioritized === 0;
  }, { timeoutMs: 30_000, what: 'queue drained' });

  const guard = new OverlapGuard(redis, { prefix: 'tickwork', leaseMs: 30_000 });
  const skipsOf = (policy: OverlapPolicy) => guard.skips(`fx.overlap-${policy}`, 1000);
  const metric = (policy: OverlapPolicy) =>
    readMetric(port, 'tickwork_overlap_skipped_total', { schedule: `fx.overlap-${policy}`, policy });

  // skip: runs never overlap; occurrences due during a run are recorded as skipped, not run later.
  const skipRuns = await runsOf('skip');
  const skipSkips = await skipsOf('skip');
  expect(overlapping(skipRuns)).toBe(false);
  expect(skipSkips.length).toBeGreaterThanOrEqual(2);
  expect(await metric('skip')).toBe(skipSkips.length);
  const ranKeys = new Set(skipRuns.map((r) => r.key));
  for (const s of skipSkips) {
    expect(ranKeys.has(s.idempotencyKey)).toBe(false);
    expect(ranKeys.has(s.runningKey)).toBe(true);
  }
  expect(worker.logs().some((l) => l.msg === 'occurrence skipped: the previous run of the schedule is still running' && l.schedule === 'fx.overlap-skip')).toBe(true);

  // buffer-one: runs never overlap; the buffered occurrence starts as soon as the previous ends (well before
  // its next occurrence would have), and the surplus ones are recorded as skipped.
  const bufRuns = await runsOf('buffer-one');
  expect(overlapping(bufRuns)).toBe(false);
  for (let i = 1; i < bufRuns.length; i++) {
    const prev = bufRuns[i - 1] as RunRecord;
    const cur = bufRuns[i] as RunRecord;
    expect(cur.start - prev.end).toBeLessThan(1500);
    expect(cur.nominal).toBeLessThan(prev.end); // it was due while the previous one was running
  }
  const bufSkips = await skipsOf('buffer-one');
  expect(bufSkips.length).toBeGreaterThanOrEqual(1);
  expect(await metric('buffer-one')).toBe(bufSkips.length);

  // allow: occurrences run concurrently; nothing is skipped.
  const allowRuns = await runsOf('allow');
  expect(allowRuns.length).toBeGreaterThan(skipRuns.length);
  expect(overlapping(allowRuns)).toBe(true);
  expect(await skipsOf('allow')).toEqual([]);
  expect(await metric('allow')).toBe(0);
}, 120_000);
