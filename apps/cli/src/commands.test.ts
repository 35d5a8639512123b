/** `tickwork jobs | enqueue` as a real process, the way operators and scripts call it. */
import { fileURLToPath } from 'node:url';
import { createLogger, QueueSet } from '@tickwork/core';
import { startApp, startRedisServer, type RedisServerHandle } from '@tickwork/testkit';
import type { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const CLI = fileURLToPath(new URL('../dist/main.js', import.meta.url));
let server: RedisServerHandle;
let redis: Redis;
let queues: QueueSet;

async function tickwork(...args: string[]) {
  const app = startApp(CLI, { REDIS_URL: server.url, LOG_LEVEL: 'silent' }, args);
  const code = await app.exited;
  return { code, out: app.lines.join('\n') };
}

beforeAll(async () => {
  server = await startRedisServer();
  redis = server.client();
  queues = new QueueSet(redis, 'tickwork', createLogger('test', 'silent'));
});
afterAll(async () => {
  await queues.close();
  await server.stop();
});

describe('tickwork CLI', () => {
  it('jobs --json lists the catalog with schedules and timezones', async () => {
    const { code, out } = await tickwork('jobs', '--json');
    expect(code).toBe(0);
    const jobs = JSON.parse(out) as { name: string; queue: string; tz: string | null }[];
    expect(jobs.find((j) => j.name === 'reports.daily-revenue')).toMatchObject({ queue: 'reports', tz: 'America/New_York' });
    expect(jobs.find((j) => j.name === 'email.send')).toMatchObject({ queue: 'email', tz: null });
  });

  it('enqueue validates and adds the job', async () => {
    const { code, out } = await tickwork('enqueue', 'email.send', '{"to":"a@example.com","subject":"hi","body":"x"}', '--json');
    expect(code).toBe(0);
    const { id } = JSON.parse(out) as { id: string };
    const job = await queues.get('email').getJob(id);
    expect(job?.data).toEqual({ to: 'a@example.com', subject: 'hi', body: 'x' });
  });

  it('enqueue with an invalid payload names each bad field and enqueues nothing', async () => {
    const before = await queues.get('email').count();
    const { code, out } = await tickwork('enqueue', 'email.send', '{"to":"nope"}');
    expect(code).toBe(1);
    expect(out).toContain('invalid payload for job "email.send": to: Invalid email address; subject:');
    expect(await queues.get('email').count()).toBe(before);
  });

  it('enqueue of an unknown job lists the known ones', async () => {
    const { code, out } = await tickwork('enqueue', 'billing.chrage-monthly', '{}');
    expect(code).toBe(1);
    expect(out).toContain('unknown job "billing.chrage-monthly"; known jobs: billing.charge-monthly');
  });

  it('enqueue with malformed JSON is a usage error', async () => {
    const { code, out } = await tickwork('enqueue', 'email.send', '{to:');
    expect(code).toBe(2);
    expect(out).toContain('payload is not valid JSON');
    expect(out).toContain('usage: tickwork enqueue');
  });

  it('unknown commands and flags are usage errors', async () => {
    expect((await tickwork('frobnicate')).code).toBe(2);
    const flag = await tickwork('jobs', '--colour');
    expect(flag.code).toBe(2);
    expect(flag.out).toContain("Unknown option '--colour'");
  });
});
