/** `tickwork dev` (what `pnpm start` runs) as a real process. */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { freePort, startApp, startRedisServer, type RedisServerHandle } from '@tickwork/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const CLI = fileURLToPath(new URL('../dist/main.js', import.meta.url));
let server: RedisServerHandle;
beforeAll(async () => {
  server = await startRedisServer();
});
afterAll(async () => {
  await server?.stop();
});

describe('tickwork dev', { timeout: 60_000 }, () => {
  it('puts the dashboard on DASHBOARD_PORT, points the banner at /schedules, and exits non-zero when the dashboard fails', async () => {
    const port = await freePort();
    const dev = startApp(CLI, { REDIS_URL: server.url, DASHBOARD_PORT: String(port), DASHBOARD_PASSWORD: 'short' }, ['dev']);
    const code = await dev.exited;
    const out = dev.lines.join('\n');
    expect(out).toContain(`dashboard at http://localhost:${port}/schedules`);
    expect(out).toContain('DASHBOARD_PASSWORD must be at least 8 characters');
    expect(out).toMatch(/tickwork dev: the dashboard stopped \(exit code 1\)/);
    expect(code).toBe(1);
  });

  it('reads .env in its directory, with the environment winning over the file, and names only what it took', async () => {
    const port = await freePort();
    const dir = mkdtempSync(join(tmpdir(), 'tickwork-dotenv-'));
    try {
      // REDIS_URL in the file points at nothing: the environment's REDIS_URL (the test's Redis) must win.
      writeFileSync(join(dir, '.env'), `# compose's file\nDASHBOARD_PASSWORD='short'\nDASHBOARD_PORT=${port}\nREDIS_URL=redis://127.0.0.1:1\n`);
      const dev = startApp(CLI, { REDIS_URL: server.url }, ['dev'], { cwd: dir });
      const code = await dev.exited;
      const out = dev.lines.join('\n');
      expect(out).toContain('tickwork: read DASHBOARD_PASSWORD, DASHBOARD_PORT from .env');
      expect(out).not.toContain("'short'"); // names, never values
      expect(out).toContain(`dashboard at http://localhost:${port}/schedules`);
      // The file's password reached the dashboard (which refuses it as too short)...
      expect(out).toContain('DASHBOARD_PASSWORD must be at least 8 characters');
      // ...and the file's REDIS_URL did not replace the environment's (no private Redis was started for it).
      expect(out).not.toContain('started a private redis-server');
      expect(code).toBe(1);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('.env in the repository', () => {
  const root = fileURLToPath(new URL('../../..', import.meta.url));
  const ignored = (path: string) => {
    const r = spawnSync('git', ['check-ignore', '-q', path], { cwd: root, encoding: 'utf8' });
    if (r.status !== 0 && r.status !== 1) throw new Error(`git check-ignore failed: ${r.error?.message ?? r.stderr}`);
    return r.status === 0; // 1: not ignored
  };

  it('is ignored by git, since it holds the dashboard password; .env.example is not', () => {
    expect(ignored('.env')).toBe(true);
    expect(ignored('.env.example')).toBe(false);
  });
});
