/**
 * monitorRedis sees every command after it resolves, with its arguments as sent, and starts cleanly on a
 * server busy with other clients' commands (where ioredis' monitor() can reject: see redis-monitor.ts).
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { monitorRedis, parseMonitorLine, type MonitoredCommand } from './redis-monitor.js';
import { startRedisServer, type RedisServerHandle } from './redis-server.js';
import { waitFor } from './wait-for.js';

let server: RedisServerHandle;
beforeAll(async () => {
  server = await startRedisServer({ password: 's3cret' });
});
afterAll(() => server?.stop());

it('sees each command with its arguments as sent (quotes, newlines, bytes, UTF-8), and what scripts run as "lua"', async () => {
  const seen: MonitoredCommand[] = [];
  const monitor = await monitorRedis({ port: server.port, password: 's3cret' }, (c) => seen.push(c));
  const client = server.client();
  const value = 'a "quoted"\nline\\ with\ttab, bell \x07, ü and 日本';
  await client.set('k:1', value);
  await client.eval("return redis.call('GET', KEYS[1])", 1, 'k:1');
  await client.ping('last');
  await waitFor(() => seen.some((c) => c.args[0] === 'ping'), { timeoutMs: 5_000, what: 'the ping seen' });
  monitor.stop();

  const set = seen.find((c) => c.args[0] === 'set');
  expect(set).toMatchObject({ db: 0, args: ['set', 'k:1', value] });
  expect(set?.source).toMatch(/^127\.0\.0\.1:\d+$/);
  expect(seen.find((c) => c.args[0] === 'eval')?.args).toEqual(['eval', "return redis.call('GET', KEYS[1])", '1', 'k:1']);
  expect(seen.find((c) => c.source === 'lua')?.args).toEqual(['GET', 'k:1']);
  const order = ['set', 'eval', 'ping'].map((name) => seen.findIndex((c) => c.args[0] === name));
  expect(order).toEqual([...order].sort((a, b) => a - b)); // in the order the server ran them
});

it('starts on a server other clients keep busy, every time, and sees all that follows', async () => {
  const busy = server.client();
  let running = true;
  const traffic = (async () => {
    while (running) await Promise.all(Array.from({ length: 20 }, () => busy.incr('busy')));
  })();
  try {
    for (let round = 0; round < 30; round++) {
      const seen: string[] = [];
      const monitor = await monitorRedis({ port: server.port, password: 's3cret' }, (c) => seen.push(c.args.join(' ')));
      await busy.set('marker', String(round));
      await waitFor(() => seen.includes(`set marker ${round}`), { timeoutMs: 5_000, what: `round ${round}'s marker` });
      monitor.stop();
    }
  } finally {
    running = false;
    await traffic;
  }
});

it('says why when the server refuses it', async () => {
  await expect(monitorRedis({ port: server.port }, () => {})).rejects.toThrow(/MONITOR on port \d+ was refused: -NOAUTH/);
  await expect(monitorRedis({ port: server.port, password: 'wrong' }, () => {})).rejects.toThrow(/was refused: -WRONGPASS/);
});

it('reads a line from a unix socket client and skips what is not a command line', () => {
  expect(parseMonitorLine('+1700000000.000001 [3 unix:/tmp/r.sock] "GET" "\\xe2\\x82\\xac"')).toEqual({
    time: '1700000000.000001',
    db: 3,
    source: 'unix:/tmp/r.sock',
    args: ['GET', '€'],
  });
  expect(parseMonitorLine('+OK')).toBeUndefined();
});
