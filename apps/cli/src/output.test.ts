/** The CLI's output through a real shell pipe: all of it, however large, and a failed write is an error. */
import { execFile } from 'node:child_process';
import { statSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { fixtureModule, startRedisServer, type RedisServerHandle } from '@tickwork/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const CLI = fileURLToPath(new URL('../dist/main.js', import.meta.url));
let server: RedisServerHandle;
let dir: string;

beforeAll(async () => {
  server = await startRedisServer();
  dir = await mkdtemp(join(tmpdir(), 'tickwork-output-'));
});
afterAll(async () => {
  await server?.stop();
  await rm(dir, { recursive: true, force: true });
});

/** Runs a bash pipeline with the CLI's env; resolves with its stdout and the CLI's own exit code (PIPESTATUS[0]). */
async function shell(pipeline: string): Promise<{ out: string; cliCode: number }> {
  const env = { ...process.env, REDIS_URL: server.url, LOG_LEVEL: 'silent', JOBS_MODULE: fixtureModule('many-schedules-catalog') };
  const { stdout } = await promisify(execFile)('bash', ['-c', `${pipeline}; echo "cli-exit=\${PIPESTATUS[0]}"`], { env, maxBuffer: 64 << 20 });
  const cliCode = Number(/cli-exit=(\d+)/.exec(stdout)?.[1]);
  return { out: stdout.replace(/cli-exit=\d+\n$/, ''), cliCode };
}

describe('CLI output', () => {
  it('writes all of a large --json result into a pipe before exiting', async () => {
    const file = join(dir, 'schedules.json');
    const toFile = await shell(`node ${CLI} schedules --count 100 --json > ${file}`);
    expect(toFile.cliCode).toBe(0);
    const size = statSync(file).size;
    expect(size).toBeGreaterThan(256 * 1024); // well past a pipe's 64 KiB buffer

    const piped = await shell(`node ${CLI} schedules --count 100 --json | wc -c`);
    expect(piped.cliCode).toBe(0);
    expect(Number(piped.out.trim())).toBe(size);
  });

  it('exits non-zero when the reader goes away before the output is written', async () => {
    const cut = await shell(`node ${CLI} schedules --count 100 --json 2>/dev/null | head -c 10 > /dev/null`);
    expect(cut.cliCode).not.toBe(0);
  });
});
