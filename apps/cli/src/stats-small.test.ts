/**
 * `tickwork stats` on a small Redis, as a newcomer's is: with no more keys than the samples asked for, every
 * key is measured once and the report says so, instead of "2000 randomly sampled keys of 83" (RANDOMKEY
 * draws with replacement). With fewer samples than keys it samples, never more draws than keys.
 */
import { fileURLToPath } from 'node:url';
import type { CapacityReport } from '@tickwork/operations';
import { startApp, startRedisServer, type RedisServerHandle } from '@tickwork/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const CLI = fileURLToPath(new URL('../dist/main.js', import.meta.url));
const PREFIX = 'tw';
const KEYS = 83;
let server: RedisServerHandle;

async function stats(...args: string[]): Promise<{ code: number | null; out: string }> {
  const app = startApp(CLI, { REDIS_URL: server.url, QUEUE_PREFIX: PREFIX, LOG_LEVEL: 'silent' }, ['stats', ...args]);
  const code = await app.exited;
  return { code, out: app.lines.join('\n') };
}

beforeAll(async () => {
  server = await startRedisServer();
  const redis = server.client();
  for (let i = 0; i < 60; i++) await redis.set(`${PREFIX}:ledger:email.send#${i}`, `d|${'x'.repeat(i)}`);
  for (let i = 0; i < KEYS - 60; i++) await redis.set(`other:${i}`, 'v');
  expect(await redis.dbsize()).toBe(KEYS);
});
afterAll(async () => {
  await server?.stop();
});

describe('tickwork stats on a Redis with fewer keys than samples', { timeout: 60_000 }, () => {
  it('measures every key once and says so, with each component counted exactly', async () => {
    const text = await stats();
    expect(text.code).toBe(0);
    expect(text.out).toContain(`By component (measured on all ${KEYS} keys, not sampled):`);
    expect(text.out).not.toMatch(/randomly sampled/);

    const json = await stats('--json');
    const { estimate } = JSON.parse(json.out) as CapacityReport;
    expect(estimate).toMatchObject({ dbKeys: KEYS, allKeys: true, sampledKeys: KEYS - estimate.measuredKeys });
    const keysOf = (c: string) => estimate.components.find((x) => x.component === c)?.keys;
    expect(keysOf('ledger')).toBe(60);
    expect(keysOf('not-tickwork')).toBe(KEYS - 60);
  });

  it('samples when asked for fewer samples than there are keys, and says how many of how many', async () => {
    const text = await stats('--samples', '10');
    expect(text.code).toBe(0);
    expect(text.out).toContain(`estimates from 10 randomly sampled keys of ${KEYS} (sizes extrapolated)`);
  });
});
