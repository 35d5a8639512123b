/**
 * `tickwork processes` against a real worker process: its record while it runs, and after a SIGTERM its
 * clean stop. Real CLI process, real Redis.
 */
import { fileURLToPath } from 'node:url';
import { hostname } from 'node:os';
import type { ProcessListing } from '@tickwork/operations';
import { appEntry, fixtureModule, freePort, startApp, startRedisServer, waitFor, type AppProcess, type RedisServerHandle } from '@tickwork/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const CLI = fileURLToPath(new URL('../dist/main.js', import.meta.url));
const PREFIX = 'tw';
let server: RedisServerHandle;
let worker: AppProcess | undefined;

beforeAll(async () => {
  server = await startRedisServer();
});
afterAll(async () => {
  await worker?.stop('SIGKILL');
  await server?.stop();
});

async function processes(...args: string[]): Promise<{ code: number | null; out: string }> {
  const app = startApp(CLI, { REDIS_URL: server.url, QUEUE_PREFIX: PREFIX, LOG_LEVEL: 'silent' }, ['processes', ...args]);
  const code = await app.exited;
  return { code, out: app.lines.join('\n') };
}

describe('tickwork processes', { timeout: 120_000 }, () => {
  it('lists a running worker with its host, pid and queues, and shows it stopped after a clean stop', async () => {
    expect(await processes()).toEqual({ code: 0, out: 'No worker or scheduler has written a record in the last 10 min.' });
    worker = startApp(appEntry('worker'), { REDIS_URL: server.url, QUEUE_PREFIX: PREFIX, JOBS_MODULE: fixtureModule('recovery-catalog'), WORKER_QUEUES: 'rc', WORKER_CONCURRENCY: '4', PORT: String(await freePort()), LOG_LEVEL: 'info' });
    await worker.waitForLog((l) => l.msg === 'worker ready', 'worker ready');
    const pid = worker.proc.pid;

    const json = await processes('--json');
    expect(json.code).toBe(0);
    const listing = JSON.parse(json.out) as ProcessListing;
    expect(listing.processes).toEqual([expect.objectContaining({ role: 'worker', status: 'alive', host: hostname(), pid, queues: ['rc'], concurrency: 4, busy: 0 })]);
    const text = await processes();
    expect(text.out).toMatch(/^ROLE +TAG +STATUS +HOST +PID/);
    expect(text.out).toMatch(new RegExp(`\\nworker +\\S+ +alive +${hostname()} +${pid} `));

    expect(await worker.stop('SIGTERM')).toBe(0);
    await waitFor(async () => (await processes()).out.includes(' stopped '), { timeoutMs: 30_000, what: 'the worker listed as stopped' });
  });
});
