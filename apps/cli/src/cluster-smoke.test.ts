/**
 * `tickwork` against a private Redis Cluster (REDIS_CLUSTER_NODES only): stats, the DLQ (list and
 * re-drive) and runtime schedules, with data spread over the masters.
 */
import { fileURLToPath } from 'node:url';
import { catalog, emailSend } from '@tickwork/jobs';
import { createLogger, createRedis, createSchedules, moveToDeadLetter, QueueSet, type RedisClient } from '@tickwork/runtime';
import { startApp, startRedisCluster, waitFor, type RedisClusterHandle } from '@tickwork/testkit';
import { Worker } from 'bullmq';
import { afterAll, beforeAll, expect, it, vi } from 'vitest';

vi.setConfig({ testTimeout: 90_000, hookTimeout: 60_000 });

const CLI = fileURLToPath(new URL('../dist/main.js', import.meta.url));
const PREFIX = 'cc';
let cluster: RedisClusterHandle;
let redis: RedisClient;
let queues: QueueSet;

async function tickwork(...args: string[]): Promise<{ code: number | null; out: string; json: () => unknown }> {
  const app = startApp(CLI, { ...cluster.env, QUEUE_PREFIX: PREFIX, LOG_LEVEL: 'silent' }, args);
  let stdout = '';
  app.proc.stdout?.on('data', (chunk: Buffer) => (stdout += chunk.toString('utf8')));
  const code = await app.exited;
  return { code, out: app.lines.join('\n'), json: () => JSON.parse(stdout) as unknown };
}

beforeAll(async () => {
  cluster = await startRedisCluster();
  redis = createRedis(cluster.target, 'command');
  queues = new QueueSet(redis, PREFIX, createLogger('test', 'silent'));
});
afterAll(async () => {
  await queues?.close();
  redis?.disconnect();
  await cluster?.stop();
});

it('stats, dlq list and redrive, and schedules ls work on a cluster', async () => {
  // One failed email.send moved to its DLQ, as a worker would.
  const blocking = createRedis(cluster.target, 'blocking');
  const worker = new Worker('email', null, { connection: blocking, prefix: queues.keyspace('email').bullPrefix });
  await queues.get('email').add(emailSend.name, { to: 'a@example.com', subject: 'hi', body: 'x' }, { jobId: 'mail-1', attempts: 1 });
  const job = await waitFor(() => worker.getNextJob('tok-1'), { what: 'take job' });
  await job.moveToFailed(new Error('smtp down'), 'tok-1');
  await worker.close();
  blocking.disconnect();
  const failed = await queues.get('email').getJob('mail-1');
  if (!failed) throw new Error('the failed job is there');
  await moveToDeadLetter({ job: failed, queues, redis, catalog });
  const schedules = createSchedules({ redis, queues, catalog, log: createLogger('test', 'silent') });
  for (const id of ['t-1', 't-2', 't-3']) await schedules.upsert(id, { job: emailSend, every: { hours: 1 }, tz: 'UTC', data: { to: `${id}@example.com`, subject: 's', body: 'b' } });

  const stats = await tickwork('stats', '--json');
  expect({ code: stats.code, out: stats.code === 0 ? "" : stats.out.slice(0, 2000) }).toEqual({ code: 0, out: "" });
  const report = stats.json() as { queues: { queue: string; dlq: { entries: number } }[] };
  expect(report.queues.find((q) => q.queue === 'email')?.dlq.entries).toBe(1);

  const list = await tickwork('dlq', 'list', '--json');
  expect(list.code).toBe(0);
  expect(JSON.stringify(list.json())).toContain('smtp down');

  const ls = await tickwork('schedules', 'ls', '--source', 'runtime', '--json');
  expect(ls.code).toBe(0);
  expect(JSON.stringify(ls.json())).toMatch(/t-1.*t-2.*t-3/s);

  const redrive = await tickwork('dlq', 'redrive', '--queue', 'email', '--all');
  expect({ code: redrive.code, out: redrive.out }).toMatchObject({ code: 0 });
  expect(await queues.get('email.dlq').count()).toBe(0);
  expect(await queues.get('email').getWaitingCount()).toBe(1);
});
