/** `tickwork dev` (what `pnpm start` runs) as a real process. */
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
});
