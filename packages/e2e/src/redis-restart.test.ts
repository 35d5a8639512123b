/**
 * Chaos: Redis is killed (-9) and restarted while two real workers process a backlog. With AOF fsync on
 * every write, nothing is lost: every job is completed, none fails for good, and the workers reconnect
 * by themselves and still stop cleanly.
 */
import { createCatalog, createEnqueue, createLogger, dlqName, QueueSet } from '@tickwork/core';
import { IdempotencyLedger, jobRecordKey } from '@tickwork/exactly-once';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { catalog, FIXTURE_KEYS } from '@tickwork/testkit/fixtures/fast-catalog';
import { startApp, type AppProcess, freePort, appEntry, fixtureModule, startRedisServer, type RedisServerHandle, waitFor } from '@tickwork/testkit';

const JOBS = 150;

describe('a Redis crash and restart mid-backlog', () => {
  let server: RedisServerHandle;
  let redis: Redis;
  const workers: AppProcess[] = [];

  beforeAll(async () => {
    server = await startRedisServer({ appendonly: true });
    redis = server.client();
  });
  afterAll(async () => {
    await Promise.all(workers.map((w) => w.stop('SIGKILL')));
    await server.stop();
  });

  it('loses no job: every one completes after Redis comes back', async () => {
    const producer = new Redis(server.url);
    const queues = new QueueSet(producer, 'tickwork', createLogger('test', 'silent'));
    const enqueue = createEnqueue(createCatalog(catalog.jobs), queues);
    for (let n = 0; n < JOBS; n++) await enqueue(catalog.require('fixture.work'), { n, ms: 20 });
    await queues.close();
    producer.disconnect();

    for (let i = 0; i < 2; i++) {
      workers.push(
        startApp(appEntry('worker'), {
          REDIS_URL: server.url,
          JOBS_MODULE: fixtureModule('fast-catalog'),
          PORT: String(await freePort()),
          WORKER_CONCURRENCY: '4',
          // A worker that lost its Redis mid-job leaves it locked; a short lock brings it back quickly.
          WORKER_LOCK_DURATION_MS: '3000',
          WORKER_STALLED_INTERVAL_MS: '1000',
        }),
      );
    }
    await waitFor(async () => (await redis.llen(FIXTURE_KEYS.runs)) >= JOBS / 4, { timeoutMs: 30_000, what: 'a quarter of the backlog done' });

    await server.kill();
    await server.restart();

    const check = new Redis(server.url);
    const checkQueues = new QueueSet(check, 'tickwork', createLogger('test', 'silent'));
    try {
      const done = await waitFor(async () => {
        const ran = new Set((await check.lrange(FIXTURE_KEYS.runs, 0, -1)).map((r) => (JSON.parse(r) as { n: number }).n));
        const pending = await checkQueues.get('fixture').getJobCountByTypes('wait', 'active', 'delayed', 'prioritized');
        return ran.size === JOBS && pending === 0 ? ran : undefined;
      }, { timeoutMs: 60_000, what: `all ${JOBS} jobs run and the queue empty after the restart` });
      expect([...done].sort((a, b) => a - b)).toEqual(Array.from({ length: JOBS }, (_, i) => i));
      expect(await checkQueues.get('fixture').getJobCountByTypes('completed')).toBe(JOBS);
      expect(await checkQueues.get('fixture').getFailedCount()).toBe(0);
      expect(await checkQueues.get(dlqName('fixture')).count()).toBe(0);
      // Each acknowledged job's run is recorded with its result: the record is written ahead of the ack on
      // the same connection, and the AOF replays commands in the order Redis ran them.
      const ledger = new IdempotencyLedger(check, { prefix: 'tickwork' });
      const completed = await checkQueues.get('fixture').getCompleted(0, -1);
      const records = await Promise.all(completed.map(async (j) => [j.returnvalue, await ledger.inspect(`fixture.work#${j.id}`, { kind: 'job', jobKey: jobRecordKey('tickwork', 'fixture', String(j.id)) })] as const));
      for (const [returned, record] of records) expect({ state: record?.state, result: record?.result }).toEqual({ state: 'done', result: returned });
    } finally {
      await checkQueues.close();
      check.disconnect();
    }
    for (const w of workers) expect(await w.stop('SIGTERM')).toBe(0);
  });
});
