/** `tickwork hash-password` and `tickwork jobs cancel` as real processes. */
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { cancelRequestsKey, loadCancelRequests, parsePasswordHash, verifyPassword } from '@tickwork/operations';
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

/** Runs the CLI with `input` on a piped (non-TTY) stdin; stdout and stderr apart. */
function withStdin(input: string, ...args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const proc = spawn(process.execPath, [CLI, ...args], { env: { PATH: process.env.PATH ?? '', LOG_LEVEL: 'silent' }, stdio: ['pipe', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  proc.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
  proc.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
  proc.stdin.end(input);
  return new Promise((resolve) => proc.once('close', (code) => resolve({ code, stdout, stderr })));
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

describe('tickwork hash-password', () => {
  it('prints a scrypt hash of the password read from stdin, which verifies; the password is not printed', async () => {
    const { code, stdout, stderr } = await withStdin('s3cret-enough\n', 'hash-password');
    expect(code).toBe(0);
    const line = stdout.trim();
    expect(line).toMatch(/^scrypt\$16384\$8\$1\$[A-Za-z0-9_-]+\$[A-Za-z0-9_-]+$/);
    expect(await verifyPassword('s3cret-enough', parsePasswordHash(line))).toBe(true);
    expect(await verifyPassword('s3cret-enough\n', parsePasswordHash(line))).toBe(false); // one trailing newline is dropped
    expect(await verifyPassword('other-password', parsePasswordHash(line))).toBe(false);
    expect(stdout + stderr).not.toContain('s3cret-enough');
  });

  it('with --user and --role prints the whole DASHBOARD_USERS entry; a short password is refused', async () => {
    const { code, stdout } = await withStdin('look-but-not-touch', 'hash-password', '--user', 'bob', '--role', 'viewer');
    expect(code).toBe(0);
    const [name, role, hash] = stdout.trim().split(':');
    expect([name, role]).toEqual(['bob', 'viewer']);
    expect(await verifyPassword('look-but-not-touch', parsePasswordHash(hash ?? ''))).toBe(true);
    const short = await withStdin('short\n', 'hash-password');
    expect(short.code).toBe(2);
    expect(short.stderr).toContain('at least 8 characters');
    expect(short.stdout).toBe('');
  });
});

describe('tickwork jobs cancel', () => {
  it('records a cancel request for a waiting job, by the CLI user, with the reason', async () => {
    await queues.get('email').add('email.send', { to: 'a@example.com', subject: 's', body: 'b' }, { jobId: 'mail-1' });
    const { code, out } = await tickwork('jobs', 'cancel', '--queue', 'email', '--job', 'mail-1', '--reason', 'sent by mistake');
    expect(code).toBe(0);
    expect(out).toContain('cancel requested for mail-1 on email; it is waiting');
    const [request] = await loadCancelRequests(redis, 'tickwork');
    expect(request).toMatchObject({ queue: 'email', jobId: 'mail-1', by: expect.stringMatching(/^cli/), reason: 'sent by mistake' });
  });

  it('an unknown job id is a clear error (exit 1) and records nothing; a missing --job or unknown queue is a usage error', async () => {
    await redis.del(cancelRequestsKey('tickwork'));
    const unknown = await tickwork('jobs', 'cancel', '--queue', 'email', '--job', 'no-such-job');
    expect(unknown.code).toBe(1);
    expect(unknown.out).toContain('no job "no-such-job" in queue "email"');
    expect(await redis.hlen(cancelRequestsKey('tickwork'))).toBe(0);
    const noJob = await tickwork('jobs', 'cancel', '--queue', 'email');
    expect(noJob.code).toBe(2);
    expect(noJob.out).toContain('--job <job id> is required');
    const badQueue = await tickwork('jobs', 'cancel', '--queue', 'nope', '--job', 'x');
    expect(badQueue.code).toBe(2);
    expect(badQueue.out).toContain('unknown queue "nope"; known queues: billing, email');
  });
});
