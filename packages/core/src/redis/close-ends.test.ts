/**
 * A client with no socket ends when it is closed (closeEnds, close-ends.ts), as BullMQ awaits to reset or
 * close a blocking connection: one Redis reconnecting, a cluster reconnecting after it lost every node or
 * connecting while its startup names are looked up. A bare ioredis client in each state never ends (shown
 * for each, so the test reaches the state it claims). No Redis is needed: the clients point at a port
 * nothing listens on, so they lose their socket at once and keep reconnecting.
 */
import { Cluster, Redis } from 'ioredis';
import { expect, it } from 'vitest';
import { createRedis } from './connection.js';

const NOWHERE = { host: '127.0.0.1', port: 1 };
const cluster = { url: 'redis://127.0.0.1:1', nodes: [NOWHERE], failoverMs: 5000 };

/** 'end' once `client` emits it, or 'no end' after `ms` (a wedged client never does). */
function endOf(client: Redis | Cluster, ms: number): Promise<string> {
  return new Promise((resolve) => {
    const timer = setTimeout(() => resolve('no end'), ms);
    client.once('end', () => {
      clearTimeout(timer);
      resolve('end');
    });
  });
}

/** Resolves once `client` reports `status` (polled, with a deadline). */
async function statusOf(client: Redis | Cluster, status: string): Promise<void> {
  const deadline = Date.now() + 5000;
  while (client.status !== status) {
    if (Date.now() > deadline) throw new Error(`the client stayed ${client.status}, not ${status}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

function quiet<T extends Redis | Cluster>(client: T): T {
  client.on('error', () => undefined);
  return client;
}

it('a bare ioredis client closed with no socket never ends: one Redis reconnecting, a cluster reconnecting or connecting', async () => {
  const redis = quiet(new Redis({ ...NOWHERE, retryStrategy: () => 200 }));
  await statusOf(redis, 'reconnecting');
  const redisEnd = endOf(redis, 1000);
  redis.disconnect();
  expect([await redisEnd, redis.status]).toEqual(['no end', 'reconnecting']);

  const lost = quiet(new Cluster([NOWHERE], { clusterRetryStrategy: () => 200 }));
  await statusOf(lost, 'reconnecting');
  const lostEnd = endOf(lost, 1000);
  lost.disconnect();
  expect([await lostEnd, lost.status]).toEqual(['no end', 'disconnecting']);

  const connecting = quiet(new Cluster([{ host: 'localhost', port: 1 }], { clusterRetryStrategy: () => 200 }));
  expect([connecting.status, connecting.nodes('all').length]).toEqual(['connecting', 0]);
  const connectingEnd = endOf(connecting, 1000);
  connecting.disconnect();
  expect([await connectingEnd, connecting.status]).toEqual(['no end', 'disconnecting']);
});

it("tickwork's one-Redis client reconnecting ends when disconnected or quit, and reconnects when asked to", async () => {
  for (const close of ['disconnect', 'quit'] as const) {
    const redis = quiet(createRedis(`redis://${NOWHERE.host}:${NOWHERE.port}`, 'blocking') as Redis);
    await statusOf(redis, 'reconnecting');
    const ended = endOf(redis, 5000);
    if (close === 'quit') expect(await redis.quit()).toBe('OK');
    else redis.disconnect();
    expect([close, await ended, redis.status]).toEqual([close, 'end', 'end']);
  }
  await renewedGoesOn(quiet(createRedis(`redis://${NOWHERE.host}:${NOWHERE.port}`, 'blocking') as Redis));
});

it("tickwork's cluster client with no node ends when closed, reconnecting or connecting, and reconnects when asked to", async () => {
  const lost = quiet(createRedis(cluster, 'blocking') as Cluster);
  await statusOf(lost, 'reconnecting');
  const ended = endOf(lost, 5000);
  lost.disconnect();
  expect([await ended, lost.status]).toEqual(['end', 'end']);
  // Closed again once ended: it stays ended; a quit answers OK.
  lost.disconnect();
  expect(lost.status).toBe('end');
  expect(await lost.quit()).toBe('OK');

  const connecting = quiet(createRedis({ ...cluster, nodes: [{ host: 'localhost', port: 1 }] }, 'blocking') as Cluster);
  expect([connecting.status, connecting.nodes('all').length]).toEqual(['connecting', 0]);
  const connectingEnd = endOf(connecting, 5000);
  connecting.disconnect();
  expect([await connectingEnd, connecting.status]).toEqual(['end', 'end']);

  await renewedGoesOn(quiet(createRedis(cluster, 'blocking') as Cluster));
});

/**
 * A client renewed in place while it reconnects (BullMQ's and the watchdog's reconnect, `disconnect(true)`)
 * goes on reconnecting: another close and retry follow. Closed after, it ends.
 */
async function renewedGoesOn(client: Redis | Cluster): Promise<void> {
  try {
    await statusOf(client, 'reconnecting');
    client.disconnect(true);
    expect(client.status).toBe('reconnecting');
    await new Promise((resolve) => client.once('reconnecting', resolve));
  } finally {
    client.disconnect();
  }
  expect(client.status).toBe('end');
}
