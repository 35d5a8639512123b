/**
 * The cluster watch keeps following a client that was closed and connected again: BullMQ resets a stuck
 * blocking connection by closing it (its `end`) and connecting it anew, as the worker's consumer watchdog
 * does, and such a client must still have its slots refreshed at the next promotion. The client here
 * points at nothing; its `end` and `ready` are the events ioredis emits on a close and a reconnect.
 */
import { Cluster } from 'ioredis';
import { expect, it } from 'vitest';
import { watchCluster, watchesCluster } from './cluster-watch.js';

it('watches a cluster client again once it is ready after an end, and not while it is closed', () => {
  const cluster = new Cluster([{ host: '127.0.0.1', port: 1 }], { lazyConnect: true });
  watchCluster(cluster);
  expect(watchesCluster(cluster)).toBe(true);
  cluster.emit('end');
  expect(watchesCluster(cluster)).toBe(false);
  cluster.emit('ready');
  expect(watchesCluster(cluster)).toBe(true);
  // Closed for good: no longer watched, and the watch's timer stops with its last client.
  cluster.emit('end');
  expect(watchesCluster(cluster)).toBe(false);
});
