/**
 * Batched script calls (the ledger's completions ahead, the history's and the schedules' batches) go out through
 * @tickwork/core's sendFlat, which hands ioredis its argument list as it is rather than through a command
 * method. What the batches rely on: every argument reaches the script as sent (numbers as their decimal
 * strings, empty and non-ASCII strings intact), the reply comes back decoded as a command method's would,
 * a connection with a key prefix still prefixes the call's keys, and the command deadline still applies.
 * Here in exactly-once (a user of it) because @tickwork/core's own tests run without a Redis.
 */
import { COMMAND_TIMED_OUT, commandTimeout, createRedis, defineScript, runScript, sendFlat, setCommandTimeout } from '@tickwork/core';
import { startRedisServer, type RedisServerHandle } from '@tickwork/testkit';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, expect, it } from 'vitest';

let server: RedisServerHandle;
beforeAll(async () => {
  server = await startRedisServer();
});
afterAll(async () => server.stop());

const ECHO = defineScript("local out = {} for i = 1, #KEYS do out[#out + 1] = KEYS[i] end for i = 1, #ARGV do out[#out + 1] = ARGV[i] end return out");

it('carries every argument as sent, numbers as decimal strings, and decodes the reply', async () => {
  const redis = createRedis(server.url, 'command');
  try {
    const argv: (string | number)[] = ['', 'ünïcödé ✓', 0, -12, 3.5, 2 ** 40, 'x'.repeat(10_000)];
    // Through runScript (EVALSHA; the first call meets NOSCRIPT on a new server and goes again as EVAL).
    const reply = (await runScript(redis, ECHO, ['k:1', 'k:2'], [...argv])) as string[];
    expect(reply).toEqual(['k:1', 'k:2', '', 'ünïcödé ✓', '0', '-12', '3.5', String(2 ** 40), 'x'.repeat(10_000)]);
    // And again, by SHA now that the server knows it.
    expect(await runScript(redis, ECHO, ['k:1'], [7])).toEqual(['k:1', '7']);
    expect(await sendFlat(redis, 'set', ['plain', 42])).toBe('OK');
    expect(await redis.get('plain')).toBe('42');
  } finally {
    redis.disconnect();
  }
});

it("goes through ioredis's own method on a connection with a key prefix, which prefixes the keys", async () => {
  const prefixed = new Redis(server.url, { keyPrefix: 'pre:' });
  try {
    expect(await sendFlat(prefixed, 'set', ['k', 'v'])).toBe('OK');
    expect(await server.client().get('pre:k')).toBe('v');
  } finally {
    prefixed.disconnect();
  }
});

it('keeps the command deadline: a call to a frozen Redis fails after it, not never', async () => {
  const frozen = await startRedisServer();
  const redis = createRedis(frozen.url, 'command');
  const before = commandTimeout();
  setCommandTimeout(300);
  try {
    await redis.ping();
    frozen.pause();
    const started = Date.now();
    await expect(sendFlat(redis, 'set', ['k', 1])).rejects.toThrow(COMMAND_TIMED_OUT);
    expect(Date.now() - started).toBeGreaterThanOrEqual(250);
  } finally {
    setCommandTimeout(before);
    frozen.resume();
    redis.disconnect();
    await frozen.stop();
  }
});
