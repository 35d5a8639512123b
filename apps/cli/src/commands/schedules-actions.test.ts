/**
 * `tickwork schedules show|pause|resume|run|rm`, on runtime and catalog schedules, as real CLI processes
 * against a private redis-server and the real schedule store.
 */
import { catalog } from '@tickwork/jobs';
import { createCatalogSource } from '@tickwork/schedules';
import { createLogger } from '@tickwork/core';
import { describe, expect, it } from 'vitest';
import { DATA, useSchedulesCli } from '../testing/schedules-cli.js';

const h = useSchedulesCli();

describe('tickwork schedules show|pause|resume|run|rm', { timeout: 60_000 }, () => {
  it('pauses with a reason, says so when already paused, resumes, and show reports the state', async () => {
    await h.api.upsert('digest:user-7', { job: 'email.send', pattern: '0 9 * * *', tz: 'America/New_York', data: JSON.parse(DATA) });
    expect((await h.cli(['schedules', 'pause', 'digest:user-7'])).code).toBe(2); // --reason is required
    const paused = await h.cli(['schedules', 'pause', 'digest:user-7', '--reason', 'user on holiday']);
    expect(paused).toMatchObject({ code: 0, stdout: 'paused schedule digest:user-7: user on holiday\n' });
    expect((await h.api.get('digest:user-7'))?.paused?.reason).toBe('user on holiday');
    expect((await h.cli(['schedules', 'pause', 'digest:user-7', '--reason', 'again'])).stdout).toContain('was already paused');
    const show = await h.cli(['schedules', 'show', 'digest:user-7']);
    expect(show.stdout).toContain('digest:user-7  (runtime schedule of job email.send, queue email)');
    expect(show.stdout).toContain('cron "0 9 * * *"  tz America/New_York');
    expect(show.stdout).toMatch(/state paused since \S+: user on holiday/);
    expect(show.stdout).toMatch(/next occurrence \d{4}-\d\d-\d\dT09:00:00\.000-0[45]:00/);
    expect((await h.cli(['schedules', 'resume', 'digest:user-7'])).stdout).toBe('resumed schedule digest:user-7\n');
    expect((await h.cli(['schedules', 'resume', 'digest:user-7'])).stdout).toContain('was not paused');
    expect(JSON.parse((await h.cli(['schedules', 'show', 'digest:user-7', '--json'])).stdout)).toMatchObject({ id: 'digest:user-7', paused: null, history: [] });
  });

  it('runs a schedule now and prints the job id of the run, which is on its queue', async () => {
    await h.api.upsert('digest:user-8', { job: 'email.send', pattern: '0 9 * * *', tz: 'UTC', data: JSON.parse(DATA) });
    const next = (await h.api.get('digest:user-8'))?.next;
    const r = await h.cli(['schedules', 'run', 'digest:user-8', '--json']);
    expect(r.code).toBe(0);
    const { jobId } = JSON.parse(r.stdout) as { jobId: string };
    expect((await h.queues.get('email').getJob(jobId))?.data).toEqual(JSON.parse(DATA));
    expect((await h.api.get('digest:user-8'))?.next).toBe(next); // the next scheduled occurrence does not move
    expect((await h.cli(['schedules', 'run', 'digest:user-8'])).stdout).toMatch(/^enqueued a run of digest:user-8 now as job \S+\n$/);
  });

  it("shows a removed runtime schedule's history, marked removed, with what it was", async () => {
    await h.api.upsert('gone:2', { job: 'email.send', pattern: '0 9 * * *', tz: 'UTC', data: JSON.parse(DATA) });
    const { jobId } = await h.api.runNow('gone:2');
    expect((await h.cli(['schedules', 'rm', 'gone:2'])).code).toBe(0);
    const text = await h.cli(['schedules', 'show', 'gone:2']);
    expect(text.code).toBe(0);
    expect(text.stdout).toMatch(/^gone:2 {2}REMOVED at \S+Z; its history is kept until \S+Z\n {2}was: runtime schedule of job email\.send, queue email, cron "0 9 \* \* \*" {2}tz UTC\n/);
    expect(text.stdout).toContain(jobId);
    const json = await h.cli(['schedules', 'show', 'gone:2', '--json']);
    expect(JSON.parse(json.stdout)).toMatchObject({ id: 'gone:2', job: 'email.send', removed: { at: expect.any(String), historyExpiresAt: expect.any(String) }, history: [{ jobId, trigger: 'manual' }] });
  });

  it('removes a runtime schedule; an unknown id or a catalog schedule is an error, exit 1', async () => {
    await h.api.upsert('gone:1', { job: 'email.send', every: { hours: 1 }, tz: 'UTC', data: JSON.parse(DATA) });
    expect(await h.cli(['schedules', 'rm', 'gone:1'])).toMatchObject({ code: 0, stdout: 'removed schedule gone:1\n' });
    expect(await h.api.get('gone:1')).toBeNull();
    for (const args of [['rm', 'gone:1'], ['pause', 'gone:1', '--reason', 'r'], ['resume', 'gone:1'], ['run', 'gone:1'], ['show', 'never:1']]) {
      const r = await h.cli(['schedules', ...args]);
      expect({ args, code: r.code }).toEqual({ args, code: 1 });
      expect(r.stderr).toMatch(/no schedule "(gone|never):1"/);
    }
    const catalogRm = await h.cli(['schedules', 'rm', 'reports.daily-revenue']);
    expect(catalogRm.code).toBe(1);
    expect(catalogRm.stderr).toContain('catalog schedule');
  });
});

describe('catalog schedules through the same actions', { timeout: 60_000 }, () => {
  it('pauses, resumes and runs a catalog schedule once a scheduler has stored it; ls --source catalog lists it', async () => {
    const name = 'reports.daily-revenue';
    expect((await h.cli(['schedules', 'pause', name, '--reason', 'r'])).stderr).toContain(`no schedule "${name}"`); // not stored yet
    await createCatalogSource({ redis: h.server.client(), queues: h.queues, catalog, log: createLogger('test', 'silent') }).put(catalog.require(name));
    expect((await h.cli(['schedules', 'pause', name, '--reason', 'warehouse migration'])).code).toBe(0);
    expect((await h.api.get(name))?.paused?.reason).toBe('warehouse migration');
    expect((await h.cli(['schedules', 'show', name])).stdout).toContain(`${name}  (catalog schedule of job ${name}, queue reports)`);
    expect((await h.cli(['schedules', 'resume', name])).code).toBe(0);
    expect((await h.cli(['schedules', 'run', name])).code).toBe(0);
    const ls = JSON.parse((await h.cli(['schedules', 'ls', '--source', 'catalog', '--json'])).stdout) as { items: { id: string; source: string }[] };
    expect(ls.items).toEqual([expect.objectContaining({ id: name, source: 'catalog' })]);
  });

  it('prints only its own output where LOG_LEVEL=info (as in the containers): no log line on stdout or stderr', async () => {
    const name = 'reports.daily-revenue';
    await createCatalogSource({ redis: h.server.client(), queues: h.queues, catalog, log: createLogger('test', 'silent') }).put(catalog.require(name));
    const text = await h.cli(['schedules', 'run', name], undefined, { LOG_LEVEL: 'info' });
    expect(text).toMatchObject({ code: 0, stderr: '' });
    expect(text.stdout).toMatch(new RegExp(`^enqueued a run of ${name.replace('.', '\\.')} now as job \\S+\n$`));
    const json = await h.cli(['schedules', 'run', name, '--json'], undefined, { LOG_LEVEL: 'info' });
    expect(json).toMatchObject({ code: 0, stderr: '' });
    expect(JSON.parse(json.stdout)).toMatchObject({ jobId: expect.any(String) }); // the whole of stdout is the result
  });
});