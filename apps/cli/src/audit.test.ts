/**
 * The CLI's changes go to the audit log the dashboard shows, with the OS user and machine as the actor;
 * what only reads (or a dry run) records nothing. Real `tickwork` processes against a private redis-server.
 */
import { execFile } from 'node:child_process';
import { hostname, userInfo } from 'node:os';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { createLogger, QueueSet } from '@tickwork/core';
import { readAudit, type AuditEntry } from '@tickwork/operations';
import { startRedisServer, type RedisServerHandle } from '@tickwork/testkit';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';

const CLI = fileURLToPath(new URL('../dist/main.js', import.meta.url));
const PREFIX = 'tw';
const MAIL = JSON.stringify({ to: 'ann@example.com', subject: 'hi', body: 'secret body' });
let server: RedisServerHandle;
let queues: QueueSet;

beforeAll(async () => {
  server = await startRedisServer();
  queues = new QueueSet(server.client(), PREFIX, createLogger('test', 'silent'));
});
beforeEach(async () => {
  await server.client().flushdb();
});
afterAll(async () => {
  await queues?.close();
  await server?.stop();
});

async function tickwork(...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  const env = { PATH: process.env.PATH ?? '', REDIS_URL: server.url, QUEUE_PREFIX: PREFIX, LOG_LEVEL: 'silent' };
  try {
    const { stdout, stderr } = await promisify(execFile)(process.execPath, [CLI, ...args], { env });
    return { code: 0, stdout, stderr };
  } catch (err) {
    const e = err as { code: number; stdout: string; stderr: string };
    return { code: e.code, stdout: e.stdout, stderr: e.stderr };
  }
}

/** The audit log, oldest first. */
async function audit(): Promise<AuditEntry[]> {
  return (await readAudit(server.client(), PREFIX, { limit: 200 })).entries.reverse();
}

describe('the CLI in the audit log', { timeout: 300_000 }, () => {
  it('records enqueue and jobs cancel with the OS user and host, the job id and the reason, never the payload', async () => {
    const enqueued = await tickwork('enqueue', 'email.send', MAIL, '--id', 'mail-1', '--delay-ms', '60000');
    expect(enqueued.code).toBe(0);
    const cancelled = await tickwork('jobs', 'cancel', '--queue', 'email', '--job', 'mail-1', '--reason', 'sent twice');
    expect(cancelled.code).toBe(0);

    const entries = await audit();
    const actor = { source: 'cli', user: userInfo().username, host: hostname(), role: null, method: null, status: null };
    expect(entries).toEqual([
      expect.objectContaining({ ...actor, target: 'tickwork enqueue', detail: { job: 'email.send', queue: 'email', jobId: 'mail-1', delayMs: '60000' } }),
      expect.objectContaining({ ...actor, target: 'tickwork jobs cancel', detail: { queue: 'email', jobId: 'mail-1', reason: 'sent twice', state: 'delayed' } }),
    ]);
    expect(JSON.stringify(entries)).not.toContain('secret body');
  });

  it('records each schedule change; reads, an unchanged add and a failure record nothing', async () => {
    const add = ['schedules', 'add', 'digest:user-1', '--job', 'email.send', '--pattern', '0 9 * * *', '--tz', 'UTC', '--data', MAIL];
    for (const args of [add, add, ['schedules', 'pause', 'digest:user-1', '--reason', 'on holiday'], ['schedules', 'resume', 'digest:user-1'], ['schedules', 'run', 'digest:user-1'], ['schedules', 'rm', 'digest:user-1']]) {
      expect({ args, code: (await tickwork(...args)).code }).toEqual({ args, code: 0 });
    }
    for (const args of [['schedules', 'show', 'digest:user-1'], ['dlq', 'list'], ['schedules', 'rm', 'digest:user-1']]) await tickwork(...args);
    const entries = await audit();
    expect(entries.map((e) => [e.target, e.detail])).toEqual([
      ['tickwork schedules add', { id: 'digest:user-1', job: 'email.send', result: 'created' }],
      ['tickwork schedules pause', { id: 'digest:user-1', reason: 'on holiday' }],
      ['tickwork schedules resume', { id: 'digest:user-1' }],
      ['tickwork schedules run', { id: 'digest:user-1', jobId: expect.stringContaining('manual') }],
      ['tickwork schedules rm', { id: 'digest:user-1' }],
    ]);
    expect(entries.every((e) => e.user === userInfo().username && e.host === hostname())).toBe(true);
  });

  it('records dlq purge and redrive (not a dry run); a dead letter that is not JSON is shown and purged on its own', async () => {
    const dlq = queues.get('email.dlq');
    for (const id of ['raw-1', 'raw-2']) {
      await dlq.add('email.send', {}, { jobId: id });
      await server.client().hset(dlq.toKey(id), 'data', '<not json>');
    }
    const show = await tickwork('dlq', 'show', '--queue', 'email', '--job', 'raw-1', '--json');
    expect(show.code).toBe(0);
    expect(JSON.parse(show.stdout)).toMatchObject({ dlqJobId: 'raw-1', entry: null, foreign: { raw: '<not json>', data: null } });
    expect((await tickwork('dlq', 'purge', '--queue', 'email', '--job', 'raw-1', '--dry-run')).code).toBe(0);
    expect((await tickwork('dlq', 'purge', '--queue', 'email', '--job', 'raw-1')).code).toBe(0);
    expect(await dlq.getJobCountByTypes('waiting')).toBe(1);
    expect((await tickwork('dlq', 'redrive', '--queue', 'email', '--all')).code).toBe(0); // the other is skipped, not re-drivable
    expect((await tickwork('dlq', 'purge', '--queue', 'email', '--all')).code).toBe(0);

    expect((await audit()).map((e) => [e.target, e.detail])).toEqual([
      ['tickwork dlq purge', { queue: 'email', ids: 'raw-1' }],
      ['tickwork dlq redrive --all', { queue: 'email', done: '0', skipped: '1', remaining: '1' }],
      ['tickwork dlq purge --all', { queue: 'email', done: '1', remaining: '0' }],
    ]);
  });
});
