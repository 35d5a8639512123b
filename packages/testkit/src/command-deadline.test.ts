/**
 * The command deadline (REDIS_COMMAND_TIMEOUT_MS, @tickwork/core redis/deadline.ts) against a frozen
 * redis-server (SIGSTOP through the handle's pause()): a command connection's command fails with "Command
 * timed out" instead of waiting, the socket is reported dropped (an `error` event the outage log counts),
 * and once the server is resumed the same client works again.
 */
import { commandTimeout, createRedis, isCommandTimeout, setCommandTimeout } from '@tickwork/core';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { startRedisServer, type RedisServerHandle } from './redis-server.js';
import { waitFor } from './wait-for.js';

let server: RedisServerHandle;
const before = commandTimeout();

beforeAll(async () => {
  setCommandTimeout(300);
  server = await startRedisServer();
});
afterAll(async () => {
  setCommandTimeout(before);
  await server?.stop();
});

it('fails a command on a frozen Redis at the deadline, drops the socket, and works again once Redis is back', async () => {
  const redis = createRedis(server.url, 'command');
  const errors: Error[] = [];
  redis.on('error', (err) => errors.push(err));
  try {
    await redis.set('k', 'v');
    server.pause();
    let failed: unknown;
    try {
      await redis.get('k').catch((err: unknown) => (failed = err));
    } finally {
      server.resume();
    }
    expect(isCommandTimeout(failed)).toBe(true);
    expect(errors.map((e) => e.message).join('\n')).toMatch(/no reply within 300 ms \(REDIS_COMMAND_TIMEOUT_MS\)/);
    expect(await waitFor(() => redis.get('k').catch(() => undefined), { what: 'a reply after the resume' })).toBe('v');
  } finally {
    redis.disconnect();
  }
});
