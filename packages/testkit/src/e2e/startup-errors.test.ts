/** Bad configuration stops each app at start with a message naming what is wrong. */
import { describe, expect, it } from 'vitest';
import { startApp } from '../app-process.js';
import { appEntry, fixtureModule } from '../paths.js';

async function failedStart(app: 'scheduler' | 'worker' | 'dashboard', env: Record<string, string>) {
  const proc = startApp(appEntry(app), env);
  const code = await proc.exited;
  return { code, output: proc.lines.join('\n') };
}

describe('start-up errors', () => {
  it.each(['scheduler', 'worker', 'dashboard'] as const)('%s refuses a malformed REDIS_URL, naming the variable', async (app) => {
    const { code, output } = await failedStart(app, { REDIS_URL: 'localhost:6379', DASHBOARD_PASSWORD: 'long-enough' });
    expect(code).not.toBe(0);
    expect(output).toContain(`${app}: invalid environment`);
    expect(output).toContain('REDIS_URL is invalid: must be a redis:// or rediss:// URL');
  });

  it('the worker refuses a non-numeric WORKER_CONCURRENCY', async () => {
    const { code, output } = await failedStart('worker', { WORKER_CONCURRENCY: 'lots' });
    expect(code).not.toBe(0);
    expect(output).toContain('WORKER_CONCURRENCY is invalid');
  });

  it('the dashboard refuses to start without a password, saying what to set', async () => {
    const { code, output } = await failedStart('dashboard', {});
    expect(code).not.toBe(0);
    expect(output).toContain('DASHBOARD_PASSWORD is not set: set DASHBOARD_PASSWORD');
  });

  it('the scheduler refuses a bad cron pattern, naming the job', async () => {
    const { code, output } = await failedStart('scheduler', { JOBS_MODULE: fixtureModule('bad-cron-catalog') });
    expect(code).not.toBe(0);
    expect(output).toContain('job "fixture.bad-cron": schedule.pattern "0 25 * * *" is not a valid cron expression');
  });
});
