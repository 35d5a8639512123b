import { fileURLToPath } from 'node:url';
import { createRedis, occurrenceKey, SCHEDULED_RUN_OPTION, type MissedPolicy, type ScheduledRun } from '@tickwork/core';
import { readHistory, shardKeys, shardOf, type OccurrenceRecord } from '@tickwork/schedules';
import { freePort, startApp, startRedisServer, waitFor, type AppProcess, type RedisServerHandle } from '@tickwork/testkit';
import { Queue, type JobsOptions } from 'bullmq';
import type { Redis } from 'ioredis';
import type { RedisClient } from '@tickwork/core';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { lateRunsKey } from './testing/late-fixtures.js';

const WORKER = fileURLToPath(new URL('../dist/main.js', import.meta.url));
const SCHEDULER = fileURLToPath(new URL('../../scheduler/dist/main.js', import.meta.url));
const FIXTURES = fileURLToPath(new URL('../dist/testing/late-fixtures.js', import.meta.url));
const PREFIX = 'tickwork';
const GRACE_MS = 1000;
const BACKLOG = 4;
const POLICIES: MissedPolicy[] = ['skip', 'once', 'all'];

let server: RedisServerHandle;
let redis: Redis;
let queueConnection: RedisClient;
let queue: Queue;
const apps: AppProcess[] = [];

interface Run {
  key: string;
  nominal: string;
  catchUp: boolean;
}
const schedule = (policy: MissedPolicy) => `fx.late-${policy}`;
const runsOf = async (policy: MissedPolicy) => (await redis.lrange(lateRunsKey(schedule(policy)), 0, -1)).map((r) => JSON.parse(r) as Run);
/** The occurrences the scheduler enqueued, oldest first. */
const backlogOf = async (policy: MissedPolicy) =>
  (await readHistory(redis, PREFIX, schedule(policy), 500)).filter((h) => h.enqueuedAt).sort((a, b) => a.nominal.localeCompare(b.nominal));

beforeAll(async () => {
  server = await startRedisServer();
  redis = server.client();
  queueConnection = createRedis(server.url, 'command');
  queue = new Queue('fxlate', { connection: queueConnection, prefix: PREFIX });
});

afterAll(async () => {
  await Promise.all(apps.map((a) => a.stop('SIGKILL')));
  await queue?.close();
  queueConnection?.disconnect();
  await server?.stop();
});

async function start(entry: string, env: Record<string, string>): Promise<AppProcess> {
  const app = startApp(entry, { REDIS_URL: server.url, JOBS_MODULE: FIXTURES, PORT: String(await freePort()), ...env });
  apps.push(app);
  await app.waitForLog((l) => l.msg === 'scheduler ready' || l.msg === 'worker ready', `${entry} ready`);
  return app;
}

it('occurrences queued while no worker ran follow the missed-run policy when a worker returns: no catch-up flood', async () => {
  // The scheduler runs alone for a few occurrences of each every-second schedule, then stops (so the backlog
  // is fixed: its due entry follows the last occurrence it enqueued).
  const scheduler = await start(SCHEDULER, { SCHEDULE_TICK_MS: '200', SCHEDULE_LOOKAHEAD_MS: '0' });
  await waitFor(async () => (await Promise.all(POLICIES.map(backlogOf))).every((b) => b.length >= BACKLOG), {
    timeoutMs: 30_000,
    what: `${BACKLOG} enqueued occurrences per schedule`,
  });
  expect(await scheduler.stop('SIGTERM')).toBe(0);
  const backlogs = new Map(await Promise.all(POLICIES.map(async (p) => [p, await backlogOf(p)] as const)));
  for (const policy of POLICIES) {
    const backlog = backlogs.get(policy) ?? [];
    // the due entry is the first occurrence after the last one enqueued (every second)
    expect(Number(await redis.zscore(shardKeys(PREFIX, shardOf(schedule(policy))).due, schedule(policy)))).toBe(Date.parse(backlog.at(-1)?.nominal ?? '') + 1000);
  }
  // Every queued occurrence must be past its grace when the worker picks it up: wait on the clock, not on work.
  const newest = Math.max(...[...backlogs.values()].map((b) => Date.parse(b.at(-1)?.nominal ?? '')));
  await waitFor(() => Date.now() > newest + GRACE_MS + 100, { timeoutMs: 10_000, what: 'the backlog to be late' });

  const worker = await start(WORKER, { WORKER_QUEUES: 'fxlate', SCHEDULE_GRACE_MS: String(GRACE_MS) });
  await waitFor(
    async () => {
      const decided = await Promise.all(POLICIES.map(async (p) => (await backlogOf(p)).every((h) => h.outcome)));
      return decided.every(Boolean) && (await queue.getJobCountByTypes('active', 'waiting', 'delayed', 'prioritized')) === 0;
    },
    { timeoutMs: 30_000, what: 'every queued occurrence decided' },
  );

  const expectRuns = async (policy: MissedPolicy, count: number) => {
    const backlog = (await backlogOf(policy)).map((h) => ({ ...h }));
    expect(backlog.length).toBeGreaterThanOrEqual(BACKLOG);
    const latest = backlog.slice(backlog.length - count);
    const older = backlog.slice(0, backlog.length - count);
    const runs = await runsOf(policy);
    // The newest `count` ran once each, flagged as catch-ups; nothing older ran.
    expect(runs.map((r) => r.key).sort()).toEqual(latest.map((h) => h.id));
    expect(runs.every((r) => r.catchUp && r.key === occurrenceKey(schedule(policy), new Date(r.nominal)))).toBe(true);
    for (const h of latest) expect(h).toMatchObject<Partial<OccurrenceRecord>>({ outcome: 'caught-up', trigger: 'catch-up' });
    for (const h of older) expect(h, h.id).toMatchObject<Partial<OccurrenceRecord>>({ outcome: 'missed', trigger: 'schedule' });
    return older;
  };
  const skipMissed = await expectRuns('skip', 0);
  expect(skipMissed.every((h) => h.error?.includes("missed: 'skip'"))).toBe(true);
  await expectRuns('once', 1);
  await expectRuns('all', 2);
  const missedLines = worker.logs().filter((l) => typeof l.msg === 'string' && l.msg.startsWith('occurrence missed:'));
  expect(missedLines.filter((l) => l.schedule === schedule('skip'))).toHaveLength(skipMissed.length);

  // A duplicate of a missed occurrence (another job with the same occurrence identity) is not run later either.
  const missed = skipMissed[0] as OccurrenceRecord;
  const meta: ScheduledRun = { schedule: schedule('skip'), nominal: Date.parse(missed.nominal), catchUp: false };
  await queue.add(schedule('skip'), {}, { jobId: 'duplicate-of-missed', [SCHEDULED_RUN_OPTION]: meta } as JobsOptions);
  await worker.waitForLog((l) => l.msg === 'duplicate suppressed' && l.jobId === 'duplicate-of-missed', 'duplicate suppressed');
  expect(await runsOf('skip')).toEqual([]);
  expect((await readHistory(redis, PREFIX, schedule('skip'), 500)).find((h) => h.id === missed.id)?.outcome).toBe('missed');
}, 90_000);
