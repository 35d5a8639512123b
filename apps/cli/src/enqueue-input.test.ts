/** `tickwork enqueue` payloads from a file or stdin, and numeric flags, through a real CLI process. */
import { spawn } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createLogger, QueueSet } from '@tickwork/core';
import { startRedisServer, type RedisServerHandle } from '@tickwork/testkit';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';

vi.setConfig({ testTimeout: 60_000, hookTimeout: 60_000 });

const CLI = fileURLToPath(new URL('../dist/main.js', import.meta.url));
const BULK = fileURLToPath(new URL('../dist/testing/bulk-catalog.js', import.meta.url));
let server: RedisServerHandle;
let queues: QueueSet;
let dir: string;

/** 300 KiB of JSON: more than one command-line argument may hold (about 128 KiB on Linux). */
const big = { rows: Array.from({ length: 3200 }, (_, i) => `row-${i}-${'x'.repeat(90)}`) };
const bigJson = JSON.stringify(big);

/** Runs `tickwork <args>` as a real process, writing `stdin` to it (or closing it at once). */
function tickwork(args: string[], stdin = ''): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const proc = spawn(process.execPath, [CLI, ...args], {
    env: { PATH: process.env.PATH ?? '', NODE_ENV: 'test', REDIS_URL: server.url, JOBS_MODULE: BULK, LOG_LEVEL: 'silent' },
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  proc.stdout.on('data', (c: Buffer) => (stdout += c.toString('utf8')));
  proc.stderr.on('data', (c: Buffer) => (stderr += c.toString('utf8')));
  proc.stdin.end(stdin);
  return new Promise((resolve) => proc.once('close', (code) => resolve({ code, stdout, stderr })));
}

async function enqueuedRows(stdout: string): Promise<number | undefined> {
  const { id } = JSON.parse(stdout) as { id: string };
  return ((await queues.get('bulk').getJob(id))?.data as typeof big | undefined)?.rows.length;
}

beforeAll(async () => {
  expect(Buffer.byteLength(bigJson)).toBeGreaterThan(300 * 1024);
  server = await startRedisServer();
  queues = new QueueSet(server.client(), 'tickwork', createLogger('test', 'silent'));
  dir = await mkdtemp(join(tmpdir(), 'tickwork-cli-'));
  await writeFile(join(dir, 'big.json'), bigJson);
});

afterAll(async () => {
  await queues?.close();
  await server?.stop();
  if (dir) await rm(dir, { recursive: true, force: true });
});

describe('enqueue: large payloads from a file or stdin', () => {
  it.each([
    { how: '--data @file', args: ['--data', '@big.json'], stdin: '' },
    { how: 'positional @file', args: ['@big.json'], stdin: '' },
    { how: '--data - (stdin)', args: ['--data', '-'], stdin: bigJson },
    { how: 'positional - (stdin)', args: ['-'], stdin: bigJson },
  ])('$how: a 300 KiB payload is validated and enqueued whole', async ({ args, stdin }) => {
    const resolved = args.map((a) => (a === '@big.json' ? `@${join(dir, 'big.json')}` : a));
    const { code, stdout, stderr } = await tickwork(['enqueue', 't.bulk-import', ...resolved, '--json'], stdin);
    expect(stderr).toBe('');
    expect(code).toBe(0);
    expect(await enqueuedRows(stdout)).toBe(big.rows.length);
  });

  it('a missing file, or a payload given twice, is a usage error that enqueues nothing', async () => {
    const before = await queues.get('bulk').count();
    const missing = await tickwork(['enqueue', 't.bulk-import', '--data', `@${join(dir, 'nope.json')}`]);
    expect(missing.code).toBe(2);
    expect(missing.stderr).toContain('cannot read the payload file');
    const twice = await tickwork(['enqueue', 't.bulk-import', '{"rows":[]}', '--data', '{"rows":[]}']);
    expect(twice.code).toBe(2);
    expect(twice.stderr).toContain('give the payload once');
    expect(await queues.get('bulk').count()).toBe(before);
  });
});

describe('numeric flags: the CLI says what is wrong, exit 2', () => {
  it.each([['-5'], ['1.5'], [''], ['0x10'], ['soon']])('--delay-ms %j', async (value) => {
    const before = await queues.get('bulk').count();
    const { code, stderr } = await tickwork(['enqueue', 't.bulk-import', '{"rows":[]}', '--delay-ms', value]);
    expect(code).toBe(2);
    expect(stderr).toContain(`--delay-ms must be an integer of 0 or more (milliseconds), got ${JSON.stringify(value)}`);
    expect(stderr).not.toContain('ambiguous');
    expect(stderr).toContain('usage: tickwork enqueue');
    expect(await queues.get('bulk').count()).toBe(before);
  });

  it('--delay-ms 0 and a positive delay are accepted', async () => {
    const { code, stdout } = await tickwork(['enqueue', 't.bulk-import', '{"rows":[]}', '--delay-ms', '60000', '--json']);
    expect(code).toBe(0);
    const { id } = JSON.parse(stdout) as { id: string };
    expect(await (await queues.get('bulk').getJob(id))?.getState()).toBe('delayed');
  });

  it('schedules --count -5', async () => {
    const { code, stderr } = await tickwork(['schedules', '--count', '-5']);
    expect(code).toBe(2);
    expect(stderr).toContain('--count must be an integer from 1 to 100, got "-5"');
  });
});
