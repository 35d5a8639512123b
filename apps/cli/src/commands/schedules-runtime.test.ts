/** `tickwork schedules <action>` as real CLI processes against a private redis-server and the real schedule store. */
import { writeFile, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { catalog } from '@tickwork/jobs';
import { createCatalogSource, createSchedules, type Schedules } from '@tickwork/schedules';
import { createLogger, QueueSet } from '@tickwork/core';
import { startRedisServer, type RedisServerHandle } from '@tickwork/testkit';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';

const CLI = fileURLToPath(new URL('../../dist/main.js', import.meta.url));
const PREFIX = 'clisched';
let server: RedisServerHandle;
let queues: QueueSet;
let api: Schedules;
let dir: string;

beforeAll(async () => {
  server = await startRedisServer();
  queues = new QueueSet(server.client(), PREFIX, createLogger('test', 'silent'));
  api = createSchedules({ redis: server.client(), queues, catalog });
  dir = await mkdtemp(join(tmpdir(), 'tickwork-sched-'));
});
beforeEach(async () => {
  await server.client().flushdb();
});
afterAll(async () => {
  await queues?.close();
  await server?.stop();
  await rm(dir, { recursive: true, force: true });
});

/** Runs `tickwork <args>` (through bash when `stdin` is given, piped in); resolves with code and output. */
async function cli(args: string[], stdin?: string, extraEnv: Record<string, string> = {}): Promise<{ code: number; stdout: string; stderr: string }> {
  const env = { PATH: process.env.PATH ?? '', REDIS_URL: server.url, QUEUE_PREFIX: PREFIX, LOG_LEVEL: 'silent', ...extraEnv };
  const [file, argv] =
    stdin === undefined
      ? [process.execPath, [CLI, ...args]]
      : ['bash', ['-c', `printf '%s' "$INPUT" | "${process.execPath}" "${CLI}" "$@"`, 'bash', ...args]];
  try {
    const { stdout, stderr } = await promisify(execFile)(file, argv, { env: { ...env, INPUT: stdin ?? '' } });
    return { code: 0, stdout, stderr };
  } catch (err) {
    const e = err as { code: number; stdout: string; stderr: string };
    return { code: e.code, stdout: e.stdout, stderr: e.stderr };
  }
}

const ADD = ['schedules', 'add', 'email.send:user-1', '--job', 'email.send', '--tz', 'Europe/Berlin'];
const DATA = JSON.stringify({ to: 'ann@example.com', subject: 'hi', body: 'morning' });

describe('tickwork schedules add', { timeout: 60_000 }, () => {
  it('creates, then reports the same definition as unchanged and a new one as changed, with the next occurrence', async () => {
    const created = await cli([...ADD, '--pattern', '0 9 * * *', '--data', DATA]);
    expect(created.code).toBe(0);
    expect(created.stdout).toMatch(/^created schedule email\.send:user-1\nnext occurrence \d{4}-\d\d-\d\dT09:00:00\.000\+0[12]:00 \(\d{4}-\d\d-\d\dT0[78]:00:00\.000Z\)\n$/);
    const again = await cli([...ADD, '--pattern', '0 9 * * *', '--data', DATA, '--json']);
    expect(JSON.parse(again.stdout)).toMatchObject({ id: 'email.send:user-1', result: 'unchanged', created: false, changed: false });
    const changed = await cli([...ADD, '--every', '90m', '--data', DATA, '--missed', 'once', '--watch']);
    expect(changed.stdout).toContain('changed schedule email.send:user-1 (the new definition applies from the next occurrence)');
    const view = await api.get('email.send:user-1');
    expect(view).toMatchObject({ source: 'runtime', job: 'email.send', everyMs: 90 * 60_000, tz: 'Europe/Berlin', watch: true, policies: { missed: 'once' }, data: JSON.parse(DATA) });
  });

  it.each([
    ['1h30m', 90 * 60_000],
    ['PT45S', 45_000],
    ['2d', 2 * 86_400_000],
  ])('takes --every %s as %d ms, and --catch-up-window and --slow-after alike', async (every, ms) => {
    const r = await cli(['schedules', 'add', `every:${every}`, '--job', 'sessions.cleanup', '--every', every, '--tz', 'UTC', '--missed', 'once', '--catch-up-window', every, '--slow-after', every]);
    expect(r.code, r.stderr).toBe(0);
    expect(await api.get(`every:${every}`)).toMatchObject({ everyMs: ms, policies: { catchUpWindowMs: ms, slowAfterMs: ms } });
  });

  it('takes --spread as the window, and show prints it with this schedule\'s offset', async () => {
    const r = await cli(['schedules', 'add', 'spread:user-9', '--job', 'sessions.cleanup', '--pattern', '0 9 * * *', '--tz', 'UTC', '--spread', '10m']);
    expect(r.code, r.stderr).toBe(0);
    const view = await api.get('spread:user-9');
    expect(view?.policies.spreadMs).toBe(600_000);
    const shown = await cli(['schedules', 'show', 'spread:user-9']);
    expect(shown.stdout).toContain(`spread=600s (+${(view?.spreadOffsetMs ?? -1) / 1000}s)`);
    expect((await cli(['schedules', 'add', 'spread:bad', '--job', 'sessions.cleanup', '--pattern', '0 9 * * *', '--tz', 'UTC', '--spread', '2d'])).stderr).toMatch(/spread .* must be from 1 second to 24 hours/);
  });

  it('reads --data from a file and from standard input', async () => {
    const file = join(dir, 'data.json');
    await writeFile(file, DATA);
    expect((await cli([...ADD, '--pattern', '0 9 * * *', '--data', `@${file}`])).code).toBe(0);
    expect((await cli(['schedules', 'add', 'from-stdin', '--job', 'email.send', '--every', '1h', '--tz', 'UTC', '--data', '-'], DATA)).code).toBe(0);
    expect((await api.get('from-stdin'))?.data).toEqual(JSON.parse(DATA));
  });

  /** A valid `add`, with some flags (or the id) replaced. */
  const addWith = (over: Record<string, string>, id = 'bad-one') => {
    const flags: Record<string, string> = { '--job': 'email.send', '--pattern': '0 9 * * *', '--tz': 'UTC', '--data': DATA, ...over };
    return ['schedules', 'add', id, ...Object.entries(flags).flat()];
  };

  it.each([
    ['an unknown job', addWith({ '--job': 'no.such-job' }), /unknown job "no\.such-job"/],
    ['data that fails the schema, naming the field', addWith({ '--data': JSON.stringify({ to: 'not-an-email', subject: 's', body: 'b' }) }), /\bto: .*email/i],
    ['a bad pattern', addWith({ '--pattern': '61 * * * *' }), /pattern|cron/i],
    ['an unknown timezone', addWith({ '--tz': 'Mars/Olympus' }), /Mars\/Olympus/],
    ['the id of a catalog schedule', addWith({}, 'reports.daily-revenue'), /catalog schedule/],
  ])('refuses %s with a clear message, exit 1, and stores nothing', async (_what, args, message) => {
    const r = await cli(args);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(message);
    expect(r.stderr).not.toMatch(/\n\s+at /); // a message, not a stack
    expect((await api.list({ source: 'runtime' })).items).toEqual([]);
  });

  it.each([
    ['no --tz', ['schedules', 'add', 'x', '--job', 'email.send', '--every', '1h'], '--tz is required'],
    ['both --pattern and --every', ['schedules', 'add', 'x', '--job', 'email.send', '--every', '1h', '--pattern', '* * * * *', '--tz', 'UTC'], 'exactly one of --pattern'],
    ['a bad --every', ['schedules', 'add', 'x', '--job', 'email.send', '--every', '5 minutes', '--tz', 'UTC'], '--every must be a duration'],
    ['--data that is not JSON', ['schedules', 'add', 'x', '--job', 'email.send', '--every', '1h', '--tz', 'UTC', '--data', '{to:'], '--data is not valid JSON'],
    ['no id', ['schedules', 'add', '--job', 'email.send', '--every', '1h', '--tz', 'UTC'], 'missing <id>'],
    ['a flag of another action', ['schedules', 'rm', 'x', '--reason', 'y'], '--reason does not go with schedules rm'],
    ['an unknown action', ['schedules', 'frobnicate'], 'unknown schedules action "frobnicate"'],
  ])('answers %s with usage, exit 2', async (_what, args, message) => {
    const r = await cli(args);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain(message);
    expect(r.stderr).toContain('usage: tickwork schedules');
  });
});

describe('tickwork schedules show|pause|resume|run|rm', { timeout: 60_000 }, () => {
  it('pauses with a reason, says so when already paused, resumes, and show reports the state', async () => {
    await api.upsert('digest:user-7', { job: 'email.send', pattern: '0 9 * * *', tz: 'America/New_York', data: JSON.parse(DATA) });
    expect((await cli(['schedules', 'pause', 'digest:user-7'])).code).toBe(2); // --reason is required
    const paused = await cli(['schedules', 'pause', 'digest:user-7', '--reason', 'user on holiday']);
    expect(paused).toMatchObject({ code: 0, stdout: 'paused schedule digest:user-7: user on holiday\n' });
    expect((await api.get('digest:user-7'))?.paused?.reason).toBe('user on holiday');
    expect((await cli(['schedules', 'pause', 'digest:user-7', '--reason', 'again'])).stdout).toContain('was already paused');
    const show = await cli(['schedules', 'show', 'digest:user-7']);
    expect(show.stdout).toContain('digest:user-7  (runtime schedule of job email.send, queue email)');
    expect(show.stdout).toContain('cron "0 9 * * *"  tz America/New_York');
    expect(show.stdout).toMatch(/state paused since \S+: user on holiday/);
    expect(show.stdout).toMatch(/next occurrence \d{4}-\d\d-\d\dT09:00:00\.000-0[45]:00/);
    expect((await cli(['schedules', 'resume', 'digest:user-7'])).stdout).toBe('resumed schedule digest:user-7\n');
    expect((await cli(['schedules', 'resume', 'digest:user-7'])).stdout).toContain('was not paused');
    expect(JSON.parse((await cli(['schedules', 'show', 'digest:user-7', '--json'])).stdout)).toMatchObject({ id: 'digest:user-7', paused: null, history: [] });
  });

  it('runs a schedule now and prints the job id of the run, which is on its queue', async () => {
    await api.upsert('digest:user-8', { job: 'email.send', pattern: '0 9 * * *', tz: 'UTC', data: JSON.parse(DATA) });
    const next = (await api.get('digest:user-8'))?.next;
    const r = await cli(['schedules', 'run', 'digest:user-8', '--json']);
    expect(r.code).toBe(0);
    const { jobId } = JSON.parse(r.stdout) as { jobId: string };
    expect((await queues.get('email').getJob(jobId))?.data).toEqual(JSON.parse(DATA));
    expect((await api.get('digest:user-8'))?.next).toBe(next); // the next scheduled occurrence does not move
    expect((await cli(['schedules', 'run', 'digest:user-8'])).stdout).toMatch(/^enqueued a run of digest:user-8 now as job \S+\n$/);
  });

  it("shows a removed runtime schedule's history, marked removed, with what it was", async () => {
    await api.upsert('gone:2', { job: 'email.send', pattern: '0 9 * * *', tz: 'UTC', data: JSON.parse(DATA) });
    const { jobId } = await api.runNow('gone:2');
    expect((await cli(['schedules', 'rm', 'gone:2'])).code).toBe(0);
    const text = await cli(['schedules', 'show', 'gone:2']);
    expect(text.code).toBe(0);
    expect(text.stdout).toMatch(/^gone:2 {2}REMOVED at \S+Z; its history is kept until \S+Z\n {2}was: runtime schedule of job email\.send, queue email, cron "0 9 \* \* \*" {2}tz UTC\n/);
    expect(text.stdout).toContain(jobId);
    const json = await cli(['schedules', 'show', 'gone:2', '--json']);
    expect(JSON.parse(json.stdout)).toMatchObject({ id: 'gone:2', job: 'email.send', removed: { at: expect.any(String), historyExpiresAt: expect.any(String) }, history: [{ jobId, trigger: 'manual' }] });
  });

  it('removes a runtime schedule; an unknown id or a catalog schedule is an error, exit 1', async () => {
    await api.upsert('gone:1', { job: 'email.send', every: { hours: 1 }, tz: 'UTC', data: JSON.parse(DATA) });
    expect(await cli(['schedules', 'rm', 'gone:1'])).toMatchObject({ code: 0, stdout: 'removed schedule gone:1\n' });
    expect(await api.get('gone:1')).toBeNull();
    for (const args of [['rm', 'gone:1'], ['pause', 'gone:1', '--reason', 'r'], ['resume', 'gone:1'], ['run', 'gone:1'], ['show', 'never:1']]) {
      const r = await cli(['schedules', ...args]);
      expect({ args, code: r.code }).toEqual({ args, code: 1 });
      expect(r.stderr).toMatch(/no schedule "(gone|never):1"/);
    }
    const catalogRm = await cli(['schedules', 'rm', 'reports.daily-revenue']);
    expect(catalogRm.code).toBe(1);
    expect(catalogRm.stderr).toContain('catalog schedule');
  });
});

describe('catalog schedules through the same actions', { timeout: 60_000 }, () => {
  it('pauses, resumes and runs a catalog schedule once a scheduler has stored it; ls --source catalog lists it', async () => {
    const name = 'reports.daily-revenue';
    expect((await cli(['schedules', 'pause', name, '--reason', 'r'])).stderr).toContain(`no schedule "${name}"`); // not stored yet
    await createCatalogSource({ redis: server.client(), queues, catalog, log: createLogger('test', 'silent') }).put(catalog.require(name));
    expect((await cli(['schedules', 'pause', name, '--reason', 'warehouse migration'])).code).toBe(0);
    expect((await api.get(name))?.paused?.reason).toBe('warehouse migration');
    expect((await cli(['schedules', 'show', name])).stdout).toContain(`${name}  (catalog schedule of job ${name}, queue reports)`);
    expect((await cli(['schedules', 'resume', name])).code).toBe(0);
    expect((await cli(['schedules', 'run', name])).code).toBe(0);
    const ls = JSON.parse((await cli(['schedules', 'ls', '--source', 'catalog', '--json'])).stdout) as { items: { id: string; source: string }[] };
    expect(ls.items).toEqual([expect.objectContaining({ id: name, source: 'catalog' })]);
  });

  it('prints only its own output where LOG_LEVEL=info (as in the containers): no log line on stdout or stderr', async () => {
    const name = 'reports.daily-revenue';
    await createCatalogSource({ redis: server.client(), queues, catalog, log: createLogger('test', 'silent') }).put(catalog.require(name));
    const text = await cli(['schedules', 'run', name], undefined, { LOG_LEVEL: 'info' });
    expect(text).toMatchObject({ code: 0, stderr: '' });
    expect(text.stdout).toMatch(new RegExp(`^enqueued a run of ${name.replace('.', '\\.')} now as job \\S+\n$`));
    const json = await cli(['schedules', 'run', name, '--json'], undefined, { LOG_LEVEL: 'info' });
    expect(json).toMatchObject({ code: 0, stderr: '' });
    expect(JSON.parse(json.stdout)).toMatchObject({ jobId: expect.any(String) }); // the whole of stdout is the result
  });
});

describe('tickwork schedules ls', { timeout: 60_000 }, () => {
  it('pages through schedules with --limit and --cursor, each once, and filters by --prefix and --job', async () => {
    const ids = Array.from({ length: 7 }, (_, i) => `page:user-${i}`);
    await Promise.all(ids.map((id) => api.upsert(id, { job: 'email.send', every: { hours: 1 }, tz: 'UTC', data: JSON.parse(DATA) })));
    await api.upsert('other:1', { job: 'sessions.cleanup', every: { hours: 1 }, tz: 'UTC' });
    const seen: string[] = [];
    let cursor: string | null = null;
    let pages = 0;
    do {
      const r = await cli(['schedules', 'ls', '--prefix', 'page:', '--limit', '3', '--json', ...(cursor ? ['--cursor', cursor] : [])]);
      const page = JSON.parse(r.stdout) as { items: { id: string }[]; cursor: string | null };
      expect(page.items.length).toBeLessThanOrEqual(3);
      seen.push(...page.items.map((v) => v.id));
      cursor = page.cursor;
      pages += 1;
    } while (cursor !== null && pages < 10);
    expect(seen).toEqual([...ids].sort());
    expect(pages).toBeGreaterThanOrEqual(3);

    const text = await cli(['schedules', 'ls', '--prefix', 'page:', '--limit', '3']);
    expect(text.stdout).toMatch(/^ID\s+SOURCE\s+JOB\s+WHEN\s+TZ\s+NEXT \(UTC\)\s+STATE\n/);
    expect(text.stdout).toMatch(/\nmore: add --cursor \S+\n$/);
    const byJob = JSON.parse((await cli(['schedules', 'ls', '--job', 'sessions.cleanup', '--source', 'runtime', '--json'])).stdout) as { items: { id: string }[] };
    expect(byJob.items.map((v) => v.id)).toEqual(['other:1']);
    expect((await cli(['schedules', 'ls', '--limit', '501'])).code).toBe(2);
  });
});

describe('tickwork schedules <action> --help', () => {
  it.each(['ls', 'show', 'add', 'rm', 'pause', 'resume', 'run'])('%s --help prints that action\'s usage, exit 0, no Redis needed', async (action) => {
    const { stdout } = await promisify(execFile)(process.execPath, [CLI, 'schedules', action, '--help'], { env: { PATH: process.env.PATH ?? '', REDIS_URL: 'redis://127.0.0.1:1' } });
    expect(stdout).toMatch(new RegExp(`\\nusage: tickwork schedules ${action}( |\\n)`));
    expect(stdout.split('\n').filter((l) => l.includes('usage:'))).toHaveLength(1);
  });
});
