/**
 * Which runs count in a schedule's history and health, with a real worker process: a run now of the
 * schedule (the dashboard's button, `tickwork schedules run`) does, as manual; an ad-hoc enqueue of the same
 * job does not, so one failing ad-hoc run cannot make the schedule `failing` (and page someone).
 */
import { fileURLToPath } from 'node:url';
import { createEnqueue, createLogger, dlqName, QueueSet } from '@tickwork/core';
import { createCatalogSource, createSchedules, lastOutcomes, loadScheduleOverview, readHistory } from '@tickwork/schedules';
import { appEntry, freePort, startApp, startRedisServer, waitFor, type AppProcess, type RedisServerHandle } from '@tickwork/testkit';
import type { Redis } from 'ioredis';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { ADHOC_RUNS, catalog, fxReport } from './testing/adhoc-fixtures.js';

const JOBS_MODULE = fileURLToPath(new URL('../dist/testing/adhoc-fixtures.js', import.meta.url));
const PREFIX = 'tickwork';
const SCHEDULE = fxReport.name;
const log = createLogger('test', 'silent');
let server: RedisServerHandle;
let redis: Redis;
let queues: QueueSet;
let worker: AppProcess;

beforeAll(async () => {
  server = await startRedisServer();
  redis = server.client();
  queues = new QueueSet(redis, PREFIX, log);
  // What a scheduler does at start for each catalog schedule: store it, so it can be run now.
  await createCatalogSource({ redis, queues, catalog, log }).put(fxReport);
  worker = startApp(appEntry('worker'), { REDIS_URL: server.url, JOBS_MODULE, WORKER_QUEUES: 'fxadhoc', PORT: String(await freePort()) });
  await worker.waitForLog((l) => l.msg === 'worker ready', 'worker ready');
}, 120_000);
afterAll(async () => {
  await worker?.stop();
  await queues?.close();
  await server?.stop();
});

const health = async () => (await loadScheduleOverview(redis, PREFIX, catalog, SCHEDULE))?.health.status;
/** Resolves once job `id` has finished (completed, or failed and moved to the DLQ), with its state. */
const finished = (id: string) =>
  waitFor(async () => {
    const state = await (await queues.get('fxadhoc').getJob(id))?.getState();
    if (state === 'completed') return state;
    if (state === undefined && (await queues.get(dlqName('fxadhoc')).count()) > 0) return 'dead-lettered';
    return undefined;
  }, { timeoutMs: 60_000, what: `job ${id} to finish` });

it('counts a run now of the schedule as manual, and no ad-hoc run of its job, failed or completed', async () => {
  const { jobId: manualId } = await createSchedules({ redis, queues, catalog, log }).runNow(SCHEDULE, { by: 'ops' });
  expect(await finished(manualId)).toBe('completed');
  const [manual, ...others] = await readHistory(redis, PREFIX, SCHEDULE);
  expect(manual).toMatchObject({ trigger: 'manual', outcome: 'manual', jobId: manualId, by: 'ops' });
  expect(others).toEqual([]);
  expect(await health()).toBe('ok');

  const enqueue = createEnqueue(catalog, queues);
  const failing = await enqueue(fxReport, { fail: true });
  expect(await finished(failing.id)).toBe('dead-lettered');
  const passing = await enqueue(fxReport, { fail: false });
  expect(await finished(passing.id)).toBe('completed');
  expect(await redis.lrange(ADHOC_RUNS, 0, -1)).toEqual([manualId, failing.id, passing.id]); // all three ran

  // The schedule's history, last outcomes and health are those of its own run only.
  expect((await readHistory(redis, PREFIX, SCHEDULE)).map((r) => r.jobId)).toEqual([manualId]);
  const last = await lastOutcomes(redis, PREFIX, SCHEDULE);
  expect(last.lastSuccess?.jobId).toBe(manualId);
  expect(last.lastFailure).toBeNull();
  expect(await health()).toBe('ok');
}, 180_000);
