/**
 * An app refuses to start on data in a key layout it cannot use (redis/layout-check.ts): one Redis's queue
 * keys found on a cluster, or a layout marker saying the other layout. The message names what was found
 * and points to the README's migration section. A clean start on a cluster records the layout; one Redis's
 * keys stay as they were (nothing written).
 */
import { checkKeyLayout, createRedis, KeyLayoutError, layoutKey, type RedisClient } from '@tickwork/core';
import { appEntry, freePort, REPO_ROOT, startApp, startRedisCluster, startRedisServer, type RedisClusterHandle, type RedisServerHandle } from '@tickwork/testkit';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';

const JOBS_MODULE = join(REPO_ROOT, 'apps', 'worker', 'dist', 'testing', 'cluster-jobs.js');

let cluster: RedisClusterHandle;
let server: RedisServerHandle;
let redis: RedisClient;

beforeAll(async () => {
  [cluster, server] = await Promise.all([startRedisCluster(), startRedisServer()]);
  redis = createRedis(cluster.target, 'command');
}, 60_000);
afterAll(async () => {
  redis?.disconnect();
  await Promise.all([cluster?.stop(), server?.stop()]);
});

/** Starts a worker on the cluster fixture catalog and resolves with its exit code and output once it exits. */
async function refusedStart(env: Record<string, string>): Promise<{ code: number | null; output: string }> {
  const app = startApp(appEntry('worker'), { ...env, PORT: String(await freePort()), JOBS_MODULE, LOG_LEVEL: 'info' });
  const code = await Promise.race([app.exited, new Promise<'running'>((resolve) => setTimeout(() => resolve('running'), 30_000))]);
  if (code === 'running') {
    await app.stop('SIGKILL');
    throw new Error(`the worker did not stop; output:\n${app.lines.join('\n')}`);
  }
  return { code, output: app.lines.join('\n') };
}

it('a worker on a cluster holding one Redis layout queue keys refuses to start, naming them', async () => {
  await redis.hset('old:alpha:meta', 'opts.maxLenEvents', '1000');
  await redis.set('old:delta.dlq:id', '7');
  const { code, output } = await refusedStart({ ...cluster.env, QUEUE_PREFIX: 'old' });
  expect(code).toBe(1);
  expect(output).toContain('KeyLayoutError');
  expect(output).toContain('old:alpha:meta');
  expect(output).toContain('old:delta.dlq:id');
  expect(output).toContain('Moving from one Redis to a cluster');
  expect(await redis.exists(layoutKey('old'))).toBe(0);
}, 60_000);

it('a layout marker of the other layout stops start-up, on a cluster and on one Redis', async () => {
  await redis.set(layoutKey('marked'), 'single');
  const onCluster = await refusedStart({ ...cluster.env, QUEUE_PREFIX: 'marked' });
  expect(onCluster.code).toBe(1);
  expect(onCluster.output).toContain('single key layout');

  await server.client().set(layoutKey('marked'), 'cluster');
  const onOne = await refusedStart({ REDIS_URL: server.url, QUEUE_PREFIX: 'marked' });
  expect(onOne.code).toBe(1);
  expect(onOne.output).toContain('cluster key layout');
  expect(onOne.output).toContain('Moving from one Redis to a cluster');
}, 90_000);

it('a clean cluster is marked; one Redis is only read', async () => {
  await checkKeyLayout(redis, 'fresh', ['alpha', 'delta']);
  expect(await redis.get(layoutKey('fresh'))).toBe('cluster');
  await checkKeyLayout(redis, 'fresh', ['alpha', 'delta']); // idempotent

  const one = server.client();
  await one.hset('single:alpha:meta', 'opts.maxLenEvents', '1000');
  await checkKeyLayout(one, 'single', ['alpha']);
  expect(await one.keys('single:*')).toEqual(['single:alpha:meta']);
  await expect(checkKeyLayout(redis, 'single', ['alpha'])).resolves.toBeUndefined(); // nothing of 'single' is on the cluster
  await redis.hset('single:alpha:meta', 'x', '1');
  await expect(checkKeyLayout(redis, 'single', ['alpha'])).rejects.toBeInstanceOf(KeyLayoutError);
});
