/**
 * `tickwork` against a private Redis Cluster (REDIS_CLUSTER_NODES only): stats, the DLQ (list and
 * re-drive) and runtime schedules, with data spread over the masters.
 */
import { fileURLToPath } from 'node:url';
import { catalog, emailSend } from '@tickwork/jobs';
import { createLogger, createRedis, QueueSet, type RedisClient } from '@tickwork/core';
import { createSchedules } from '@tickwork/schedules';
import { moveToDeadLetter } from '@tickwork/operations';
import { startApp, startClusterQueues, startRedisServer, waitFor, type ClusterQueues, type RedisClusterHandle } from '@tickwork/testkit';
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

let fixture: ClusterQueues | undefined;
beforeAll(async () => {
  ({ cluster, redis, queues } = fixture = await startClusterQueues(PREFIX));
}, 60_000);
afterAll(async () => {
  await fixture?.stop();
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

it('schedules copy defines the runtime schedules of one Redis again on the cluster, pauses included, and a second copy changes nothing', async () => {
  const old = await startRedisServer();
  const oldRedis = createRedis(old.url, 'command');
  const oldQueues = new QueueSet(oldRedis, PREFIX, createLogger('test', 'silent'));
  try {
    const before = createSchedules({ redis: oldRedis, queues: oldQueues, catalog, log: createLogger('test', 'silent') });
    const data = (id: string) => ({ to: `${id}@example.com`, subject: 's', body: 'b' });
    await before.upsert('copy:u-1', { job: emailSend, pattern: '0 9 * * 1', tz: 'Europe/Berlin', data: data('u-1'), missed: 'once', overlap: 'buffer-one', watch: true, history: 3 });
    await before.upsert('copy:u-2', { job: emailSend, every: { minutes: 30 }, tz: 'UTC', data: data('u-2'), slowAfter: { minutes: 5 } });
    await before.upsert('copy:u-3', { job: emailSend, every: { hours: 2 }, tz: 'UTC', data: data('u-3') });
    await before.pause('copy:u-3', 'customer on holiday');

    const first = await tickwork('schedules', 'copy', '--from', old.url, '--prefix', 'copy:', '--json');
    expect({ code: first.code, out: first.code === 0 ? '' : first.out }).toEqual({ code: 0, out: '' });
    expect(first.json()).toMatchObject({ created: 3, changed: 0, unchanged: 0, paused: 1, failed: [] });

    const after = createSchedules({ redis, queues, catalog, log: createLogger('test', 'silent') });
    for (const id of ['copy:u-1', 'copy:u-2', 'copy:u-3']) {
      const was = await before.get(id);
      const is = await after.get(id);
      // The pause keeps its reason; its time is the copy's (the API pauses now).
      const { createdAt: _a, updatedAt: _b, version: _c, next: _d, paused, ...definition } = was ?? ({} as never);
      expect(is).toMatchObject(definition);
      expect(is?.paused?.reason).toBe(paused?.reason);
      expect(is?.next).toBe(was?.next); // same rule, same next occurrence
    }

    const again = await tickwork('schedules', 'copy', '--from', old.url, '--prefix', 'copy:', '--json');
    expect(again.json()).toMatchObject({ created: 0, changed: 0, unchanged: 3, failed: [] });
  } finally {
    await oldQueues.close();
    oldRedis.disconnect();
    await old.stop();
  }
});
