/**
 * The members the fast paths use that live on instances, not prototypes (so contract.ts cannot check them
 * without a connection): on a real Worker, its backend, its connection's client and ioredis's socket. Each
 * is checked by name, so a BullMQ or ioredis release that renames or drops one fails here, naming it. At run
 * time the same members are checked on every Worker and connection (worker/tickwork-worker.ts,
 * ack/ack-fold.ts, cork.ts): one missing sends that Worker or connection BullMQ's own way.
 */
import { startRedisServer, type RedisServerHandle } from '@tickwork/testkit';
import { Worker } from 'bullmq';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ackConnectionOf } from '../worker/ack-connection.js';

let server: RedisServerHandle;
let worker: Worker;
let client: Record<string, unknown>;
beforeAll(async () => {
  server = await startRedisServer();
  worker = new Worker('contract-instance', async () => undefined, { connection: server.client(), autorun: false });
  await worker.waitUntilReady();
  client = (await ackConnectionOf(worker)) as unknown as Record<string, unknown>;
});
afterAll(async () => {
  await worker.close(true);
  await server.stop();
});

/** `holder[member]`'s type, with the member's name in the failure. */
function expectMember(holder: unknown, name: string, member: string, type: string): void {
  const found = typeof (holder as Record<string, unknown>)[member];
  expect(found, `BullMQ internal "${name}" is ${found}, not ${type}`).toBe(type);
}

describe("the installed BullMQ's instances", () => {
  it('a Worker has drained, processorAcceptsSignal and a lockManager that tracks jobs', () => {
    expectMember(worker, 'Worker#drained', 'drained', 'boolean');
    expectMember(worker, 'Worker#processorAcceptsSignal', 'processorAcceptsSignal', 'boolean');
    const locks = (worker as unknown as { lockManager: unknown }).lockManager;
    expectMember(locks, 'Worker#lockManager.trackJob', 'trackJob', 'function');
    expectMember(locks, 'Worker#lockManager.untrackJob', 'untrackJob', 'function');
  });

  it('its backend has the client promise and the KEYS of moveToFinished (its `closing` is public: its d.ts)', () => {
    const backend = worker.getBackend() as unknown as Record<string, unknown>;
    expect(backend.client, 'BullMQ internal "RedisQueueBackend#client" is not a promise').toBeInstanceOf(Promise);
    expect(Array.isArray(backend.moveToFinishedKeys), 'BullMQ internal "RedisQueueBackend#moveToFinishedKeys" is not an array').toBe(true);
    expect((backend.moveToFinishedKeys as unknown[]).length, 'BullMQ internal "RedisQueueBackend#moveToFinishedKeys" no longer has 14 KEYS').toBe(14);
  });

  it("its connection's client runs scripts by name (runCommand), knows moveToFinished's text and queues commands", () => {
    expectMember(client, 'IRedisClient#runCommand', 'runCommand', 'function');
    expectMember(client, 'ioredis Redis#defineCommand', 'defineCommand', 'function');
    const scripts = client.scriptsSet as Record<string, { lua?: string; numberOfKeys?: number }> | undefined;
    const move = Object.keys(scripts ?? {}).find((n) => n.startsWith('moveToFinished:'));
    expect(move, 'BullMQ internal "ioredis Redis#scriptsSet" holds no moveToFinished script').toBeDefined();
    expect(scripts?.[move as string]?.numberOfKeys, 'BullMQ internal "moveToFinished" no longer takes 14 KEYS').toBe(14);
    expect(typeof (client.commandQueue as { length?: unknown } | undefined)?.length, 'ioredis internal "Redis#commandQueue" has no length').toBe('number');
  });

  it("ioredis's connector has the ready check the restart watch wraps (ready-check.ts)", () => {
    const connector = client.connector as Record<string, unknown> | undefined;
    expectMember(connector, 'ioredis Redis#connector.check', 'check', 'function');
  });

  it("ioredis's socket can be corked", () => {
    const stream = client.stream as Record<string, unknown> | undefined;
    expectMember(stream, 'ioredis Redis#stream.cork', 'cork', 'function');
    expectMember(stream, 'ioredis Redis#stream.uncork', 'uncork', 'function');
  });
});
