/**
 * Batches of occurrences on a private Redis Cluster (3 masters): runtime schedules of one job due at the
 * same instants, run by real scheduler and worker processes configured only by REDIS_CLUSTER_NODES, travel
 * in batches (per schedule shard: each shard is claimed on its own) and each take effect exactly once, and
 * nothing fails on the way (a CROSSSLOT reply would be an error in the logs).
 */
import { createLogger, OCCURRENCE_BATCH_JOB, occurrenceBatchOf, scheduledRunOf } from '@tickwork/core';
import { createSchedules, readHistory } from '@tickwork/schedules';
import { appEntry, freePort, REPO_ROOT, startApp, startClusterQueues, waitFor, type AppProcess, type ClusterQueues } from '@tickwork/testkit';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { catalog, counted, EFFECTS_KEY } from '../testing/cluster-jobs.js';

const PREFIX = 'tw';
const JOBS_MODULE = join(REPO_ROOT, 'apps', 'worker', 'dist', 'testing', 'cluster-jobs.js');
const SCHEDULES = 48;

let fixture: ClusterQueues | undefined;
const apps: AppProcess[] = [];
beforeAll(async () => {
  fixture = await startClusterQueues(PREFIX);
}, 60_000);
afterAll(async () => {
  await Promise.all(apps.map((a) => a.stop('SIGKILL')));
  await fixture?.stop();
});

async function start(app: 'worker' | 'scheduler', env: Record<string, string> = {}): Promise<AppProcess> {
  const { cluster } = fixture as ClusterQueues;
  const p = startApp(appEntry(app), { ...cluster.env, QUEUE_PREFIX: PREFIX, PORT: String(await freePort()), JOBS_MODULE, LOG_LEVEL: 'info', ...env });
  apps.push(p);
  await p.waitForLog((l) => l.msg === `${app} ready`, `the ${app} on the cluster`, 30_000);
  return p;
}

it('runtime schedules due together run in batches on a cluster, each occurrence once', async () => {
  const { redis, queues } = fixture as ClusterQueues;
  const schedules = createSchedules({ redis, queues, catalog, log: createLogger('test', 'silent') });
  for (let i = 0; i < SCHEDULES; i++) await schedules.upsert(`cl-herd-${i}`, { job: counted.name, every: { seconds: 10 }, tz: 'UTC', data: { i } });
  const worker = await start('worker');
  const scheduler = await start('scheduler', { SCHEDULE_TICK_MS: '100', SCHEDULE_ADD_AHEAD_MS: '8000', SCHEDULE_BATCH_MAX: '4' });

  // One instant of every schedule completed. A cluster's scheduler claims each schedule shard on its own, so
  // an instant's occurrences go in batches per shard (48 schedules over 16 shards: about 3 a shard).
  const queue = queues.get(counted.queue);
  const instant = await waitFor(
    async () => {
      const byTime = new Map<number, { jobs: number; ids: string[] }>();
      for (const j of await queue.getJobs(['completed'])) {
        const runs = j.name === OCCURRENCE_BATCH_JOB ? occurrenceBatchOf(j.data).runs.map((o) => ({ id: o.id, nominal: o.run.nominal })) : [{ id: String(j.id), nominal: scheduledRunOf(j.opts)?.nominal ?? 0 }];
        for (const r of runs) {
          const t = byTime.get(r.nominal) ?? { jobs: 0, ids: [] };
          t.ids.push(r.id);
          byTime.set(r.nominal, t);
        }
        const first = runs[0];
        if (first) (byTime.get(first.nominal) as { jobs: number }).jobs++;
      }
      // The first instant, due within the look-ahead when the scheduler starts, is added at its time, one job each.
      return [...byTime.values()].find((t) => t.ids.length === SCHEDULES && t.jobs < SCHEDULES);
    },
    { timeoutMs: 45_000, what: 'one instant of every schedule completed, in batches' },
  );
  // Fewer BullMQ jobs than occurrences, and each occurrence in one of them.
  expect(instant.jobs).toBeLessThan(SCHEDULES);
  expect(new Set(instant.ids).size).toBe(SCHEDULES);

  // Exactly once: with the scheduler stopped and the queue drained, each schedule's effects are as many as its completed runs.
  await scheduler.stop();
  // What it added ahead is promoted by BullMQ without it (Added ahead) and runs.
  const counts = async () => Object.values(await queue.getJobCounts('waiting', 'delayed', 'active', 'prioritized'));
  await waitFor(async () => (await counts()).every((n) => n === 0), { timeoutMs: 30_000, what: 'the queue drained' });
  const effects = await redis.hgetall(EFFECTS_KEY);
  for (let i = 0; i < SCHEDULES; i++) {
    const completed = await waitFor(
      async () => {
        const records = await readHistory(redis, PREFIX, `cl-herd-${i}`, 50);
        return records.every((r) => r.outcome !== undefined || r.enqueuedAt === undefined) ? records.filter((r) => r.outcome === 'completed').length : undefined;
      },
      { what: `cl-herd-${i}'s runs recorded` },
    );
    expect(completed, `runs of ${i}`).toBeGreaterThan(0);
    expect(Number(effects[String(i)]), `effects of ${i}`).toBe(completed);
  }
  // Nothing failed on the way (a CROSSSLOT reply would be an error).
  expect(worker.logs().filter((l) => Number(l.level) >= 50).map((l) => l.msg)).toEqual([]);
});
