/**
 * Scheduler and worker processes on a private Redis Cluster (REDIS_CLUSTER_NODES only): a catalog schedule
 * and runtime schedules spread over the 16 schedule shards fire (added ahead and lifted), each occurrence
 * once, with history; and the reads that span every shard, queue or master (schedule list and count, due
 * backlog, capacity report) work there.
 */
import { capacityReport } from '@tickwork/operations';
import { createLogger, QueueSet, type RedisClient } from '@tickwork/core';
import { createSchedules, dueBacklog, readHistory } from '@tickwork/schedules';
import { startClusterQueues, waitFor, type ClusterQueues, type RedisClusterHandle } from '@tickwork/testkit';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { catalog, FX_RUNS_KEY, FX_TENANT_RUNS_KEY, fxTenant } from './testing/fixture-catalog.js';
import { fixtureApps, waitReady } from './testing/fixture-apps.js';

const PREFIX = 'cs';
const TENANTS = Array.from({ length: 8 }, (_, i) => `tenant-${i}`);

let cluster: RedisClusterHandle;
let redis: RedisClient;
let queues: QueueSet;
const apps = fixtureApps(() => cluster, PREFIX);

let fixture: ClusterQueues | undefined;
beforeAll(async () => {
  ({ cluster, redis, queues } = fixture = await startClusterQueues(PREFIX));
}, 60_000);
afterAll(async () => {
  await apps.killAll();
  await fixture?.stop();
});

it('catalog and runtime schedules fire once per occurrence on a cluster; list, count, backlog and capacity read every shard', async () => {
  const schedules = createSchedules({ redis, queues, catalog, log: createLogger('test', 'silent') });
  for (const t of TENANTS) await schedules.upsert(t, { job: fxTenant, pattern: '* * * * * *', tz: 'UTC', data: { tenant: t } });
  const relaxed = { SCHEDULE_GRACE_MS: '20000' };
  // Each every-second occurrence added ahead (a 1 s window beyond a 300 ms look-ahead) and lifted at its time:
  // the lift's keys are in its queue's slot.
  const ahead = { SCHEDULE_LOOKAHEAD_MS: '300', SCHEDULE_ADD_AHEAD_MS: '1000' };
  const [scheduler, worker] = await Promise.all([apps.start('scheduler', { ...relaxed, ...ahead }), apps.start('worker', relaxed)]);
  await Promise.all([waitReady(scheduler, 'scheduler ready'), waitReady(worker, 'worker ready')]);
  await waitFor(
    async () => (await redis.llen(FX_RUNS_KEY)) >= 3 && Object.keys(await redis.hgetall(FX_TENANT_RUNS_KEY)).length >= 2 * TENANTS.length,
    { timeoutMs: 30_000, what: '3 runs of fx.second and 2 of each tenant' },
  );
  await scheduler.stop('SIGTERM');
  await worker.stop('SIGTERM');
  // Nothing went wrong on the way (a CROSSSLOT reply, say, would be logged as an error).
  expect([...scheduler.logs(), ...worker.logs()].filter((l) => Number(l.level) >= 50).map((l) => l.msg)).toEqual([]);
  expect(scheduler.logs().filter((l) => /could not lift|does not match/.test(String(l.msg))).map((l) => l.msg)).toEqual([]);

  const runs = (await redis.lrange(FX_RUNS_KEY, 0, -1)).map((r) => JSON.parse(r) as { key: string; nominal: string });
  expect(new Set(runs.map((r) => r.key)).size).toBe(runs.length);
  const perOccurrence = Object.values(await redis.hgetall(FX_TENANT_RUNS_KEY)).map(Number);
  expect(perOccurrence.every((n) => n === 1)).toBe(true);
  const history = await readHistory(redis, PREFIX, 'fx.second', 100);
  expect(history.filter((h) => h.outcome === 'completed').map((h) => h.nominal).sort()).toEqual(runs.map((r) => r.nominal).sort());
  // Added ahead: enqueued more than the look-ahead before their time (at their time they would be 50 ms before).
  expect(history.filter((h) => Date.parse(h.nominal) - Date.parse(h.enqueuedAt ?? h.nominal) > 300).length).toBeGreaterThan(0);

  // The tenants' ids hash to several shards, so these reads span several slots and masters.
  const page = await schedules.list({ source: 'runtime', limit: 5 });
  const rest = await schedules.list({ source: 'runtime', cursor: page.cursor, limit: 50 });
  expect([...page.items, ...rest.items].map((s) => s.id)).toEqual(TENANTS);
  expect(await schedules.count({ source: 'runtime' })).toBe(TENANTS.length);
  expect(await schedules.count()).toBe(TENANTS.length + 1);
  expect((await dueBacklog(redis, PREFIX, Date.now() + 3600_000)).backlog).toBe(TENANTS.length + 1);

  const report = await capacityReport({ redis, prefix: PREFIX, catalog }, { samples: 200 });
  expect(report.queues.map((q) => q.queue)).toEqual(['fx', 'fxt']);
  // Every run completed its job; occurrences its overlap policy skipped complete too, without a run.
  expect(report.queues.find((q) => q.queue === 'fxt')?.completed).toBeGreaterThanOrEqual(perOccurrence.length);
  expect(report.estimate.dbKeys).toBeGreaterThan(0);
  expect(report.estimate.sampledKeys).toBeGreaterThan(0);
  const component = (c: string) => report.estimate.components.find((x) => x.component === c)?.keys ?? 0;
  expect(component('schedules')).toBeGreaterThan(0);
  expect(component('jobs-finished')).toBeGreaterThan(0);
  expect(report.memory.usedBytes).toBeGreaterThan(0);
}, 90_000);
