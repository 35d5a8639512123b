/** `tickwork schedules add` as real CLI processes against a private redis-server and the real schedule store. */
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ADD, DATA, useSchedulesCli } from '../testing/schedules-cli.js';

const h = useSchedulesCli();

describe('tickwork schedules add', { timeout: 60_000 }, () => {
  it('creates, then reports the same definition as unchanged and a new one as changed, with the next occurrence', async () => {
    const created = await h.cli([...ADD, '--pattern', '0 9 * * *', '--data', DATA]);
    expect(created.code).toBe(0);
    expect(created.stdout).toMatch(/^created schedule email\.send:user-1\nnext occurrence \d{4}-\d\d-\d\dT09:00:00\.000\+0[12]:00 \(\d{4}-\d\d-\d\dT0[78]:00:00\.000Z\)\n$/);
    const again = await h.cli([...ADD, '--pattern', '0 9 * * *', '--data', DATA, '--json']);
    expect(JSON.parse(again.stdout)).toMatchObject({ id: 'email.send:user-1', result: 'unchanged', created: false, changed: false });
    const changed = await h.cli([...ADD, '--every', '90m', '--data', DATA, '--missed', 'once', '--watch']);
    expect(changed.stdout).toContain('changed schedule email.send:user-1 (the new definition applies from the next occurrence)');
    const view = await h.api.get('email.send:user-1');
    expect(view).toMatchObject({ source: 'runtime', job: 'email.send', everyMs: 90 * 60_000, tz: 'Europe/Berlin', watch: true, policies: { missed: 'once' }, data: JSON.parse(DATA) });
  });

  it.each([
    ['1h30m', 90 * 60_000],
    ['PT45S', 45_000],
    ['2d', 2 * 86_400_000],
  ])('takes --every %s as %d ms, and --catch-up-window and --slow-after alike', async (every, ms) => {
    const r = await h.cli(['schedules', 'add', `every:${every}`, '--job', 'sessions.cleanup', '--every', every, '--tz', 'UTC', '--missed', 'once', '--catch-up-window', every, '--slow-after', every]);
    expect(r.code, r.stderr).toBe(0);
    expect(await h.api.get(`every:${every}`)).toMatchObject({ everyMs: ms, policies: { catchUpWindowMs: ms, slowAfterMs: ms } });
  });

  it('takes --spread as the window, and show prints it with this schedule\'s offset', async () => {
    const r = await h.cli(['schedules', 'add', 'spread:user-9', '--job', 'sessions.cleanup', '--pattern', '0 9 * * *', '--tz', 'UTC', '--spread', '10m']);
    expect(r.code, r.stderr).toBe(0);
    const view = await h.api.get('spread:user-9');
    expect(view?.policies.spreadMs).toBe(600_000);
    const shown = await h.cli(['schedules', 'show', 'spread:user-9']);
    expect(shown.stdout).toContain(`spread=600s (+${(view?.spreadOffsetMs ?? -1) / 1000}s)`);
    expect((await h.cli(['schedules', 'add', 'spread:bad', '--job', 'sessions.cleanup', '--pattern', '0 9 * * *', '--tz', 'UTC', '--spread', '2d'])).stderr).toMatch(/spread .* must be from 1 second to 24 hours/);
  });

  it('reads --data from a file and from standard input', async () => {
    const file = join(h.dir, 'data.json');
    await writeFile(file, DATA);
    expect((await h.cli([...ADD, '--pattern', '0 9 * * *', '--data', `@${file}`])).code).toBe(0);
    expect((await h.cli(['schedules', 'add', 'from-stdin', '--job', 'email.send', '--every', '1h', '--tz', 'UTC', '--data', '-'], DATA)).code).toBe(0);
    expect((await h.api.get('from-stdin'))?.data).toEqual(JSON.parse(DATA));
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
    const r = await h.cli(args);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(message);
    expect(r.stderr).not.toMatch(/\n\s+at /); // a message, not a stack
    expect((await h.api.list({ source: 'runtime' })).items).toEqual([]);
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
    const r = await h.cli(args);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain(message);
    expect(r.stderr).toContain('usage: tickwork schedules');
  });
});