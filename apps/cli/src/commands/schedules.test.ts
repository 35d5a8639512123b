import { execFile } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { mergeOccurrence, scheduleRegistryKey } from '@tickwork/schedules';
import { occurrenceKey } from '@tickwork/core';
import { startRedisServer, type RedisServerHandle } from '@tickwork/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const CLI = join(dirname(fileURLToPath(import.meta.url)), '../../dist/main.js');
let server: RedisServerHandle;

beforeAll(async () => {
  server = await startRedisServer();
});
afterAll(async () => server.stop());

async function cli(...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const { stdout, stderr } = await promisify(execFile)(process.execPath, [CLI, ...args], {
      env: { PATH: process.env.PATH ?? '', REDIS_URL: server.url, QUEUE_PREFIX: 'clitest' },
    });
    return { code: 0, stdout, stderr };
  } catch (err) {
    const e = err as { code: number; stdout: string; stderr: string };
    return { code: e.code, stdout: e.stdout, stderr: e.stderr };
  }
}

describe('tickwork schedules', { timeout: 30_000 }, () => {
  it('--json previews each schedule with policies, tz/UTC times and registration', async () => {
    await server.client().hset(scheduleRegistryKey('clitest'), 'billing.charge-monthly', '{}');
    const { code, stdout } = await cli('schedules', '--json', '--count', '3', '--from', '2026-03-07T00:00:00Z');
    expect(code).toBe(0);
    const rows = JSON.parse(stdout) as { name: string; registered: boolean; policies: { missed: string }; next: { utc: string; local: string; dstTransition?: unknown }[] }[];
    const billing = rows.find((r) => r.name === 'billing.charge-monthly');
    expect(billing).toMatchObject({ registered: true, policies: { missed: 'once' } });
    expect(billing?.next.map((n) => n.utc)).toEqual(['2026-04-01T00:00:00.000Z', '2026-05-01T00:00:00.000Z', '2026-06-01T00:00:00.000Z']);
    const report = rows.find((r) => r.name === 'reports.daily-revenue');
    expect(report?.registered).toBe(false);
    expect(report?.next.map((n) => n.local)).toEqual([
      '2026-03-07T08:00:00.000-05:00',
      '2026-03-08T08:00:00.000-04:00',
      '2026-03-09T08:00:00.000-04:00',
    ]);
    expect(report?.next[1]?.dstTransition).toEqual({ from: 'UTC-05:00', to: 'UTC-04:00' });
  });

  it('prints a readable table with DST transitions marked', async () => {
    const { code, stdout } = await cli('schedules', '--count', '2', '--from', '2026-03-07T00:00:00Z');
    expect(code).toBe(0);
    expect(stdout).toContain('reports.daily-revenue  (queue reports)  cron "0 8 * * *"  tz America/New_York\n');
    expect(stdout.match(/America\/New_York/g)).toHaveLength(1); // the tz once, not in the pattern too
    expect(stdout).toContain('2026-03-08T08:00:00.000-04:00  2026-03-08T12:00:00.000Z  DST UTC-05:00 -> UTC-04:00');
    expect(stdout).toContain('missed=once');
    expect(stdout).toContain('overlap=skip');
  });

  it('shows each schedule\'s registration and health, as the dashboard judges them', async () => {
    const redis = server.client();
    await redis.hset(scheduleRegistryKey('clitest'), 'reports.daily-revenue', '{}');
    const nominal = new Date(Date.now() - 3600_000);
    const id = occurrenceKey('reports.daily-revenue', nominal);
    await mergeOccurrence(redis, 'clitest', 'reports.daily-revenue', id, nominal.getTime(), { endedAt: nominal.toISOString(), outcome: 'failed', error: 'warehouse down' }, { id, schedule: 'reports.daily-revenue', nominal: nominal.toISOString(), trigger: 'schedule' }, 'lastFailure');

    const json = await cli('schedules', '--json', '--count', '1');
    const rows = JSON.parse(json.stdout) as { name: string; registered: boolean; health: { status: string; reason: string } }[];
    expect(rows.find((r) => r.name === 'reports.daily-revenue')).toMatchObject({ registered: true, health: { status: 'failing', reason: 'last run failed: warehouse down' } });
    expect(rows.find((r) => r.name === 'sessions.cleanup')).toMatchObject({ registered: false, health: { status: 'waiting' } });

    const text = (await cli('schedules', '--count', '1')).stdout;
    expect(text).toContain('reports.daily-revenue  (queue reports)  cron "0 8 * * *"  tz America/New_York\n  registered  health failing: last run failed: warehouse down\n');
    expect(text).toMatch(/sessions\.cleanup .*\n  not registered: start the scheduler  health waiting: no successful run yet\n/);
  });

  it('rejects a bad --count or --from with usage (exit 2)', async () => {
    const bad = await cli('schedules', '--count', '0');
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain('--count must be an integer from 1 to 100');
    const badFrom = await cli('schedules', '--from', 'yesterday');
    expect(badFrom.code).toBe(2);
    expect(badFrom.stderr).toContain('--from must be an ISO date or time');
  });
});
