/**
 * The private Redis Cluster tests start (the groundwork of running tickwork on a cluster): three masters
 * with a replica each, keys spread over the masters, and a killed master's replica promoted with the data.
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { startRedisCluster, type RedisClusterHandle } from './redis-cluster.js';
import { waitFor } from './wait-for.js';

let cluster: RedisClusterHandle;
beforeAll(async () => {
  cluster = await startRedisCluster();
}, 60_000);
afterAll(async () => {
  await cluster?.stop();
});

it('starts 3 masters with a replica each; keys spread over the masters; a killed master fails over with its data', async () => {
  expect(cluster.nodes).toHaveLength(6);
  const client = cluster.client();
  const keys = Array.from({ length: 30 }, (_, i) => `key-${i}`);
  for (const k of keys) await client.set(k, k);
  const owners = new Set(await Promise.all(keys.map(async (k) => (await cluster.masterOf(k)).port)));
  expect(owners.size).toBe(3);

  // Redis replicates asynchronously: wait for the replicas to have the keys before the crash.
  const victim = await cluster.masterOf('key-0');
  await victim.client().wait(1, 5000);
  await victim.kill();
  await waitFor(async () => (await cluster.masterOf('key-0').catch(() => victim)).port !== victim.port, {
    timeoutMs: 30_000,
    what: "a replica promoted in the killed master's place",
  });
  await cluster.ready();
  expect(await client.get('key-0')).toBe('key-0');
  for (const k of keys) expect(await client.get(k)).toBe(k);
}, 60_000);
