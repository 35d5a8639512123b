/**
 * A master that stops answering (SIGSTOP: a frozen host, before any failover) holds up only the schedules
 * whose shards it serves: the scheduler ticks on without those shards, so the schedules on the other masters
 * keep firing on time, and the frozen shards fire again once their master answers.
 */
import { createLogger, SCHEDULED_RUN_OPTION, type QueueSet, type RedisClient } from '@tickwork/core';
import { createSchedules, shardKeys, shardOf } from '@tickwork/schedules';
import { startClusterQueues, waitFor, type ClusterQueues, type RedisClusterHandle } from '@tickwork/testkit';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { catalog, fxTenant } from './testing/fixture-catalog.js';
import { fixtureApps, waitReady } from './testing/fixture-apps.js';

const PREFIX = 'si';

let cluster: RedisClusterHandle;
let redis: RedisClient;
let queues: QueueSet;
const apps = fixtureApps(() => cluster, PREFIX);
let fixture: ClusterQueues | undefined;

beforeAll(async () => {
  // No replicas and a long node timeout: the frozen master is neither replaced nor judged failed meanwhile.
  ({ cluster, redis, queues } = fixture = await startClusterQueues(PREFIX, { replicas: 0, nodeTimeoutMs: 120_000 }));
}, 60_000);
afterAll(async () => {
  await apps.killAll();
  await fixture?.stop();
});

/** Nominal times (ms) of the occurrences of `tenant` the scheduler has added to the queue (from the job's occurrence option). */
async function nominalsOf(tenant: string): Promise<number[]> {
  const jobs = await queues.get('fxt').getJobs(['waiting'], 0, -1);
  return jobs.filter((j) => (j.data as { tenant: string }).tenant === tenant).map((j) => (j.opts as Record<string, { nominal: number }>)[SCHEDULED_RUN_OPTION]?.nominal ?? NaN);
}

it("a frozen master's schedule shards wait for it; every other schedule keeps firing on time", async () => {
  const queueMaster = await cluster.masterOf(`${PREFIX}:{fxt}:fxt:meta`);
  const shardMaster = async (id: string) => (await cluster.masterOf(shardKeys(PREFIX, shardOf(id)).due)).port;
  // A master that does not hold the queue, a tenant whose shard it serves, and a tenant whose shard it does not.
  const ids = Array.from({ length: 64 }, (_, i) => `tenant-${i}`);
  const masters = await Promise.all(ids.map(shardMaster));
  const victimPort = masters.find((p) => p !== queueMaster.port);
  const victim = cluster.nodes.find((n) => n.port === victimPort);
  const stuck = ids.find((_, i) => masters[i] === victimPort);
  const live = ids.find((_, i) => masters[i] !== victimPort);
  if (!victim || !stuck || !live) throw new Error('the 64 tenants did not spread over two masters');

  const schedules = createSchedules({ redis, queues, catalog, log: createLogger('test', 'silent') });
  for (const t of [stuck, live]) await schedules.upsert(t, { job: fxTenant, pattern: '* * * * * *', tz: 'UTC', data: { tenant: t } });
  const scheduler = await apps.start('scheduler', { SCHEDULE_GRACE_MS: '60000' });
  await waitReady(scheduler, 'scheduler ready');
  await waitFor(async () => (await nominalsOf(stuck)).length >= 2 && (await nominalsOf(live)).length >= 2, { timeoutMs: 20_000, what: 'both tenants firing' });

  victim.pause();
  const frozenAt = Date.now();
  await waitFor(async () => (await nominalsOf(live)).filter((n) => n > frozenAt).length >= 3, {
    timeoutMs: 15_000,
    what: 'three occurrences of the other tenant while the master is frozen',
  });
  // The frozen shard's tenant got none meanwhile (its claims wait on its master).
  expect((await nominalsOf(stuck)).filter((n) => n > frozenAt + 1000)).toEqual([]);
  expect(scheduler.logs().some((l) => l.msg === 'schedule shards slow to answer; the others tick on without them until they do')).toBe(true);

  victim.resume();
  const resumedAt = Date.now();
  await waitFor(async () => (await nominalsOf(stuck)).some((n) => n > resumedAt), { timeoutMs: 20_000, what: 'the frozen shard firing again once its master answers' });
  // The occurrences due while it was frozen were added late, not lost (within the grace period).
  const during = (await nominalsOf(stuck)).filter((n) => n > frozenAt + 1000 && n < resumedAt);
  expect(during.length).toBeGreaterThan(0);
  expect(await scheduler.stop('SIGTERM')).toBe(0);
}, 120_000);
