/** `tickwork schedules ls` and each action's `--help`, as real CLI processes against a private redis-server. */
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { CLI, DATA, useSchedulesCli } from '../testing/schedules-cli.js';

const h = useSchedulesCli();

describe('tickwork schedules ls', { timeout: 60_000 }, () => {
  it('pages through schedules with --limit and --cursor, each once, and filters by --prefix and --job', async () => {
    const ids = Array.from({ length: 7 }, (_, i) => `page:user-${i}`);
    await Promise.all(ids.map((id) => h.api.upsert(id, { job: 'email.send', every: { hours: 1 }, tz: 'UTC', data: JSON.parse(DATA) })));
    await h.api.upsert('other:1', { job: 'sessions.cleanup', every: { hours: 1 }, tz: 'UTC' });
    const seen: string[] = [];
    let cursor: string | null = null;
    let pages = 0;
    do {
      const r = await h.cli(['schedules', 'ls', '--prefix', 'page:', '--limit', '3', '--json', ...(cursor ? ['--cursor', cursor] : [])]);
      const page = JSON.parse(r.stdout) as { items: { id: string }[]; cursor: string | null };
      expect(page.items.length).toBeLessThanOrEqual(3);
      seen.push(...page.items.map((v) => v.id));
      cursor = page.cursor;
      pages += 1;
    } while (cursor !== null && pages < 10);
    expect(seen).toEqual([...ids].sort());
    expect(pages).toBeGreaterThanOrEqual(3);

    const text = await h.cli(['schedules', 'ls', '--prefix', 'page:', '--limit', '3']);
    expect(text.stdout).toMatch(/^ID\s+SOURCE\s+JOB\s+WHEN\s+TZ\s+NEXT \(UTC\)\s+STATE\n/);
    expect(text.stdout).toMatch(/\nmore: add --cursor \S+\n$/);
    const byJob = JSON.parse((await h.cli(['schedules', 'ls', '--job', 'sessions.cleanup', '--source', 'runtime', '--json'])).stdout) as { items: { id: string }[] };
    expect(byJob.items.map((v) => v.id)).toEqual(['other:1']);
    expect((await h.cli(['schedules', 'ls', '--limit', '501'])).code).toBe(2);
  });
});

describe('tickwork schedules <action> --help', () => {
  it.each(['ls', 'show', 'add', 'rm', 'pause', 'resume', 'run'])('%s --help prints that action\'s usage, exit 0, no Redis needed', async (action) => {
    const { stdout } = await promisify(execFile)(process.execPath, [CLI, 'schedules', action, '--help'], { env: { PATH: process.env.PATH ?? '', REDIS_URL: 'redis://127.0.0.1:1' } });
    expect(stdout).toMatch(new RegExp(`\\nusage: tickwork schedules ${action}( |\\n)`));
    expect(stdout.split('\n').filter((l) => l.includes('usage:'))).toHaveLength(1);
  });
});