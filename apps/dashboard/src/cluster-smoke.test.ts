/**
 * The dashboard as a real process on a private Redis Cluster (REDIS_CLUSTER_NODES only): its pages read
 * queues, dead letters, schedules and capacity spread over the masters.
 */
import { catalog, emailSend } from '@tickwork/jobs';
import { createEnqueue, type QueueSet } from '@tickwork/core';
import { appEntry, freePort, startApp, startClusterQueues, type AppProcess, type ClusterQueues, type RedisClusterHandle } from '@tickwork/testkit';
import { afterAll, beforeAll, expect, it } from 'vitest';

const PREFIX = 'dc';
const PASSWORD = 'cluster-pages';
const auth = { authorization: `Basic ${Buffer.from(`admin:${PASSWORD}`).toString('base64')}` };

let cluster: RedisClusterHandle;
let queues: QueueSet;
let dashboard: AppProcess | undefined;

let fixture: ClusterQueues | undefined;
beforeAll(async () => {
  ({ cluster, queues } = fixture = await startClusterQueues(PREFIX));
}, 60_000);
afterAll(async () => {
  await dashboard?.stop('SIGKILL');
  await fixture?.stop();
});

it('serves the jobs, dead-letter, schedule, capacity, processes and job pages and finds a job from a cluster', async () => {
  const { id } = await createEnqueue(catalog, queues)(emailSend, { to: 'a@example.com', subject: 'hi', body: 'x' });
  const port = await freePort();
  dashboard = startApp(appEntry('dashboard'), { ...cluster.env, QUEUE_PREFIX: PREFIX, PORT: String(port), DASHBOARD_PASSWORD: PASSWORD, LOG_LEVEL: 'info' });
  await dashboard.waitForLog((l) => l.msg === 'dashboard ready', 'the dashboard on the cluster', 30_000);
  const base = `http://127.0.0.1:${port}`;
  for (const path of ['/schedules', '/jobs?queue=email', '/dead-letters', '/capacity', '/api/capacity', '/api/schedules', '/api/dead-letters', '/readyz', '/queues/', '/processes', '/api/processes', `/jobs/email/${id}`, `/api/find?id=${id}`]) {
    const res = await fetch(`${base}${path}`, { headers: auth });
    expect({ path, status: res.status }).toEqual({ path, status: 200 });
  }
  const capacity = (await (await fetch(`${base}/api/capacity`, { headers: auth })).json()) as { queues: { queue: string; waiting: number }[] };
  expect(capacity.queues.find((q) => q.queue === 'email')?.waiting).toBe(1);
  const found = await fetch(`${base}/find?id=${id}`, { headers: auth, redirect: 'manual' });
  expect(found.headers.get('location')).toBe(`/jobs/email/${id}`);
  expect(dashboard.logs().filter((l) => Number(l.level) >= 50)).toEqual([]);
}, 90_000);
