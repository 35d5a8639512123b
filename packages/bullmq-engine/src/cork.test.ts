/**
 * holdEveryCommand (cork.ts): the commands many jobs send in one turn leave in a few socket writes, in the
 * order they were sent, with every reply where it belongs. Counted on a real redis-server through the
 * socket's own write calls (a corked Node stream hands what it held to `_writev` in one call).
 */
import { startRedisServer, type RedisServerHandle } from '@tickwork/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RedisClient } from '@tickwork/core';
import { holdEveryCommand } from './cork.js';

let server: RedisServerHandle;
beforeAll(async () => {
  server = await startRedisServer();
});
afterAll(async () => {
  await server.stop();
});

/** A ready client whose socket writes are counted. */
async function counted(): Promise<{ redis: RedisClient; writes: () => number }> {
  const redis = server.client() as unknown as RedisClient;
  await redis.ping();
  const stream = (redis as unknown as { stream: { _write: (...a: unknown[]) => unknown; _writev?: (...a: unknown[]) => unknown } }).stream;
  let n = 0;
  const write = stream._write.bind(stream);
  stream._write = (...a: unknown[]) => (n++, write(...a));
  const writev = stream._writev?.bind(stream);
  if (writev) stream._writev = (...a: unknown[]) => (n++, writev(...a));
  return { redis, writes: () => n };
}

/** 48 commands sent in one turn, as many jobs' bookkeeping is: a SET each, then a GET of each key. */
async function oneTurn(redis: RedisClient, tag: string): Promise<string[]> {
  const sent: Promise<unknown>[] = [];
  for (let i = 0; i < 24; i++) sent.push(redis.set(`${tag}:${i}`, `v${i}`));
  for (let i = 0; i < 24; i++) sent.push(redis.get(`${tag}:${i}`));
  return (await Promise.all(sent)).slice(24) as string[];
}

describe('holdEveryCommand', () => {
  it('sends a turn of commands in a few socket writes, in order, each reply to its command', async () => {
    const bare = await counted();
    const held = await counted();
    holdEveryCommand(held.redis);
    const before = { bare: bare.writes(), held: held.writes() };
    const expected = Array.from({ length: 24 }, (_, i) => `v${i}`);
    expect(await oneTurn(bare.redis, 'bare')).toEqual(expected);
    expect(await oneTurn(held.redis, 'held')).toEqual(expected);
    // The bare client writes each command on its own; the held one a group of at most 16 per write (cork.ts GROUP).
    expect(bare.writes() - before.bare).toBeGreaterThan(24);
    expect(held.writes() - before.held).toBeLessThanOrEqual(4);
    bare.redis.disconnect();
    held.redis.disconnect();
  });

  it('wraps a connection once, however often it is asked', async () => {
    const held = await counted();
    holdEveryCommand(held.redis);
    const send = held.redis.sendCommand;
    holdEveryCommand(held.redis);
    expect(held.redis.sendCommand).toBe(send);
    expect(await oneTurn(held.redis, 'twice')).toHaveLength(24);
    held.redis.disconnect();
  });
});
