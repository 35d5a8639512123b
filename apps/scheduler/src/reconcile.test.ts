import { createCatalog, createLogger, defineJob, QueueSet, type AnyJob } from '@tickwork/runtime';
import { startRedisServer, type RedisServerHandle } from '@tickwork/testkit';
import type { Redis } from 'ioredis';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { reconcileSchedules } from './reconcile.js';

const log = createLogger('test', 'silent');
const scheduled = (name: string, queue: string, pattern: string, tz = 'UTC'): AnyJob =>
  defineJob({ name, queue, schema: z.object({}), schedule: { pattern, tz }, handler: async () => undefined });

describe('reconcileSchedules (real Redis)', () => {
  let server: RedisServerHandle;
  let redis: Redis;

  beforeAll(async () => {
    server = await startRedisServer();
    redis = server.client();
  });
  afterAll(async () => server.stop());
  beforeEach(async () => {
    await redis.flushall();
  });

  const run = async (jobs: AnyJob[]) => {
    const queues = new QueueSet(server.client(), 'tickwork', log);
    try {
      return await reconcileSchedules({ catalog: createCatalog(jobs), queues, redis: server.client(), log });
    } finally {
      await queues.close();
    }
  };

  const schedulerIds = async (queue: string) => {
    const queues = new QueueSet(server.client(), 'tickwork', log);
    try {
      return (await queues.get(queue).getJobSchedulers(0, -1)).map((s) => ({ id: s.key, pattern: s.pattern, tz: s.tz })).sort((a, b) => String(a.id).localeCompare(String(b.id)));
    } finally {
      await queues.close();
    }
  };

  it('registers one scheduler per scheduled job with its explicit timezone and next run', async () => {
    const result = await run([scheduled('reports.daily', 'reports', '0 8 * * *', 'America/New_York')]);
    expect(await schedulerIds('reports')).toEqual([{ id: 'reports.daily', pattern: '0 8 * * *', tz: 'America/New_York' }]);
    const next = result.upserted[0]?.next;
    expect(next).toBeInstanceOf(Date);
    // 08:00 in New York is 12:00 or 13:00 UTC depending on DST.
    expect([12, 13]).toContain(next?.getUTCHours());
  });

  it('is idempotent: running it twice, or three replicas at once, leaves one scheduler and one pending job per schedule', async () => {
    const jobs = [scheduled('a.job', 'q1', '*/5 * * * *'), scheduled('b.job', 'q1', '0 0 * * *')];
    await run(jobs);
    await Promise.all([run(jobs), run(jobs), run(jobs)]);
    expect((await schedulerIds('q1')).map((s) => s.id)).toEqual(['a.job', 'b.job']);
    const queues = new QueueSet(server.client(), 'tickwork', log);
    const delayed = await queues.get('q1').getDelayed();
    await queues.close();
    expect(delayed.map((j) => j.name).sort()).toEqual(['a.job', 'b.job']);
  });

  it('removes schedulers that are no longer in the catalog, even on a queue the catalog no longer has', async () => {
    await run([scheduled('keep.me', 'q1', '0 * * * *'), scheduled('drop.me', 'q1', '0 * * * *'), scheduled('gone.too', 'old', '0 * * * *')]);
    const result = await run([scheduled('keep.me', 'q1', '0 * * * *')]);
    expect(result.removed.sort((a, b) => a.id.localeCompare(b.id))).toEqual([
      { id: 'drop.me', queue: 'q1' },
      { id: 'gone.too', queue: 'old' },
    ]);
    expect((await schedulerIds('q1')).map((s) => s.id)).toEqual(['keep.me']);
    expect(await schedulerIds('old')).toEqual([]);
  });

  it('updates a scheduler in place when its pattern changes', async () => {
    await run([scheduled('a.job', 'q1', '0 * * * *')]);
    await run([scheduled('a.job', 'q1', '30 * * * *')]);
    expect(await schedulerIds('q1')).toEqual([{ id: 'a.job', pattern: '30 * * * *', tz: 'UTC' }]);
  });
});
