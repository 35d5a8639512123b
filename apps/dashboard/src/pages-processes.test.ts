/**
 * The Processes page against real worker and scheduler processes (the built apps, as containers run them):
 * what each says about itself, busy slots while a job runs, a killed worker shown as gone and a scheduler
 * stopped with SIGTERM shown as stopped.
 */
import { readFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { jobOptions } from '@tickwork/core';
import type { ProcessListing, ProcessRow } from '@tickwork/operations';
import { appEntry, fixtureModule, freePort, REPO_ROOT, startApp, waitFor, type AppProcess } from '@tickwork/testkit';
import { gated, RC_KEYS, RC_QUEUE } from '@tickwork/testkit/fixtures/recovery-catalog';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startDashboard, VIEWER_AUTH, type TestDashboard } from './testing/dashboard-server.js';

const PREFIX = 'tw';
let d: TestDashboard;
const apps: AppProcess[] = [];

beforeAll(async () => {
  d = await startDashboard(PREFIX);
});
afterAll(async () => {
  await Promise.all(apps.map((a) => a.stop('SIGKILL')));
  await d?.close();
});

async function start(app: 'worker' | 'scheduler', env: Record<string, string>): Promise<AppProcess> {
  const proc = startApp(appEntry(app), { ...d.target.env, QUEUE_PREFIX: PREFIX, JOBS_MODULE: fixtureModule('recovery-catalog'), PORT: String(await freePort()), LOG_LEVEL: 'info', ...env });
  apps.push(proc);
  await proc.waitForLog((l) => l.msg === `${app} ready`, `${app} ready`);
  return proc;
}

const listing = async (): Promise<ProcessListing> => (await (await d.get('/api/processes')).json()) as ProcessListing;
/** Polls the listing until the process with `pid` matches `check`. */
const rowOf = (pid: number | undefined, what: string, check: (r: ProcessRow) => boolean = () => true) =>
  waitFor(async () => (await listing()).processes.find((p) => p.pid === pid && check(p)), { timeoutMs: 60_000, what });

const versionOf = (app: string) => (JSON.parse(readFileSync(`${REPO_ROOT}/apps/${app}/package.json`, 'utf8')) as { version: string }).version;

describe('the Processes page', { timeout: 180_000 }, () => {
  it('lists real workers and schedulers with their details and busy slots; a killed one as gone, a stopped one as stopped', async () => {
    const worker = await start('worker', { WORKER_QUEUES: RC_QUEUE, WORKER_CONCURRENCY: '3', WORKER_HEARTBEAT_MS: '250', WORKER_DEAD_AFTER_MS: '1500' });
    const scheduler = await start('scheduler', {});

    const w = await rowOf(worker.proc.pid, 'the worker listed');
    expect(w).toMatchObject({ role: 'worker', status: 'alive', host: hostname(), version: versionOf('worker'), queues: [RC_QUEUE], concurrency: 3, busy: 0 });
    const s = await rowOf(scheduler.proc.pid, 'the scheduler listed');
    expect(s).toMatchObject({ role: 'scheduler', status: 'alive', host: hostname(), version: versionOf('scheduler'), concurrency: null, busy: null });
    expect(s.queues).toContain(RC_QUEUE);

    // A job that waits at its gate holds one of the worker's slots until the gate opens.
    await d.queues.get(RC_QUEUE).add(gated.name, { gate: 'busy' }, jobOptions(gated));
    await waitFor(async () => (await d.redis.llen(RC_KEYS.waiting('busy'))) >= 1, { timeoutMs: 60_000, what: 'the job at its gate' });
    await rowOf(worker.proc.pid, 'one busy slot', (r) => r.busy === 1);
    const page = await (await d.get('/processes')).text();
    const workerRow = new RegExp(`<tr id="process-worker-${w.tag}">[\\s\\S]*?</tr>`).exec(page)?.[0] ?? '';
    expect(workerRow).toContain('<span class="badge ok">alive</span>');
    expect(workerRow).toContain(`<td class="num">${worker.proc.pid}</td>`);
    expect(workerRow).toContain('<td class="num">1 of 3</td>');
    await d.redis.set(RC_KEYS.gate('busy'), '1');

    // Killed: no clean stop, no more beats; it stays listed as gone.
    await worker.stop('SIGKILL');
    const gone = await rowOf(worker.proc.pid, 'the killed worker gone', (r) => r.status === 'gone');
    expect(gone.silentMs).toBeGreaterThanOrEqual(1500);
    // Stopped with SIGTERM: it drains, deregisters and says so.
    expect(await scheduler.stop('SIGTERM')).toBe(0);
    await rowOf(scheduler.proc.pid, 'the scheduler stopped', (r) => r.status === 'stopped');

    const viewer = await fetch(`${d.base}/processes`, { headers: VIEWER_AUTH });
    expect(viewer.status).toBe(200);
    const seen = await viewer.text();
    expect(seen).toMatch(new RegExp(`<tr id="process-worker-${w.tag}">[\\s\\S]*?<span class="badge failing">gone</span>`));
    expect(seen).toMatch(new RegExp(`<tr id="process-scheduler-${s.tag}">[\\s\\S]*?<span class="badge neutral">stopped</span>`));
  });
});
