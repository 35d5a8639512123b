/**
 * Every page of the dashboard in a real browser (headless Chromium) with data on it: each renders under
 * its Content-Security-Policy with no console error, failed request or error answer, and is saved as a
 * screenshot. `pnpm docs:screenshots` runs this file with SCREENSHOT_DIR=docs/images, which refreshes the
 * pictures docs/dashboard.md shows; otherwise they go to a temporary directory.
 */
import { mkdirSync, mkdtempSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { catalog } from '@tickwork/jobs';
import { createSchedules, mergeOccurrence, scheduleRegistryKey } from '@tickwork/schedules';
import { createLogger, occurrenceKey } from '@tickwork/core';
import { sampleMemory, TimelineWriter } from '@tickwork/operations';
import { REPO_ROOT, waitFor } from '@tickwork/testkit';
import { Worker } from 'bullmq';
import type { Browser, BrowserContext } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { deadLetterPath } from './pages/dead-letters.js';
import { launchChromium, steadyContext, watchedPage } from './testing/browser.js';
import { deadLetterEmail, PASSWORD, startDashboard, USER, type TestDashboard } from './testing/dashboard-server.js';

const DIR = process.env.SCREENSHOT_DIR ? resolve(REPO_ROOT, process.env.SCREENSHOT_DIR) : mkdtempSync(join(tmpdir(), 'tickwork-screens-'));
let d: TestDashboard;
let browser: Browser;
let admin: BrowserContext;
const takers: Worker[] = [];
let dlqId = '';

beforeAll(async () => {
  mkdirSync(DIR, { recursive: true });
  d = await startDashboard();
  browser = await launchChromium();
  admin = await steadyContext(browser, { httpCredentials: { username: USER, password: PASSWORD }, viewport: { width: 1280, height: 800 } });
  await seed();
});
afterAll(async () => {
  await Promise.all(takers.map((w) => w.close(true)));
  await admin?.close();
  await browser?.close();
  await d?.close();
});

/** A little of everything: a schedule's history, runtime schedules, dead letters, a running job. */
async function seed(): Promise<void> {
  const report = 'reports.daily-revenue';
  await d.redis.hset(scheduleRegistryKey(d.prefix), report, JSON.stringify({ queue: 'reports', speedupMs: null }));
  for (let h = 1; h <= 3; h++) {
    const nominal = new Date(Date.now() - h * 86_400_000);
    const id = occurrenceKey(report, nominal);
    const ok = h !== 2;
    await mergeOccurrence(
      d.redis,
      d.prefix,
      report,
      id,
      nominal.getTime(),
      { startedAt: new Date(nominal.getTime() + 800).toISOString(), endedAt: new Date(nominal.getTime() + 4200).toISOString(), attempts: ok ? 1 : 3, outcome: ok ? 'completed' : 'failed', ...(!ok && { error: 'warehouse timeout' }) },
      { id, schedule: report, nominal: nominal.toISOString(), trigger: 'schedule', jobId: `${report}@${h}`, enqueuedAt: nominal.toISOString() },
      ok ? 'lastSuccess' : 'lastFailure',
    );
  }
  // An hour of what workers count, minute by minute, for the charts (a clock the writer reads per count).
  let at = Date.now() - 59 * 60_000;
  const timeline = new TimelineWriter({ redis: d.redis, prefix: d.prefix, log: createLogger('test', 'silent'), clock: () => at });
  for (let m = 0; m < 60; m++, at += 60_000) {
    for (const [queue, base] of [['email', 40], ['reports', 12]] as const) {
      const q = timeline.queue(queue);
      const n = Math.round(base * (1.2 + Math.sin(m / 7)));
      for (let i = 0; i < n; i++) q.attempt('completed', 20 + ((i * 37) % 400), 5 + ((i * 13) % 900));
      if (m % 9 === 4) q.attempt('retried', 1200, 40), q.attempt('failed', 1500, -1), q.deadLettered();
    }
  }
  await timeline.stop();
  await sampleMemory(d.redis, d.prefix);
  const api = createSchedules({ redis: d.redis, queues: d.queues, catalog });
  for (const [user, tz] of [['user-1', 'Europe/Lisbon'], ['user-2', 'America/New_York'], ['user-3', 'Asia/Kathmandu']] as const) {
    await api.upsert(`digest:${user}`, { job: 'digest.user', pattern: '0 9 * * 1', tz, data: { userId: user }, spread: { minutes: 10 } } as Parameters<typeof api.upsert>[1]);
  }
  dlqId = await deadLetterEmail(d, 'mail-42', { reason: 'smtp 421: too many connections' });
  await deadLetterEmail(d, 'mail-43', { reason: 'smtp 550: mailbox unavailable' });
  await d.queues.get('email').add('email.send', { to: 'a@example.com', subject: 'Welcome', body: 'Hello' }, { jobId: 'mail-running' });
  const taker = new Worker('email', null, { connection: d.target.client(), prefix: d.prefix });
  takers.push(taker);
  await waitFor(async () => (await taker.getNextJob('screens', { block: false })) ?? undefined, { timeoutMs: 30_000, what: 'a running job' });
}

const PAGES: [name: string, path: () => string][] = [
  ['overview', () => '/overview'],
  ['queue', () => '/queue/email'],
  ['schedules', () => '/schedules'],
  ['schedule', () => '/schedules/reports.daily-revenue'],
  ['runtime-schedule', () => `/schedules/${encodeURIComponent('digest:user-3')}`],
  ['dead-letters', () => '/dead-letters'],
  ['dead-letter', () => deadLetterPath('email', dlqId)],
  ['running', () => '/jobs'],
  ['job', () => '/jobs/email/mail-running'],
  ['find', () => '/find?id=mail-42'],
  ['capacity', () => '/capacity'],
  ['processes', () => '/processes'],
  ['audit', () => '/audit'],
];

describe('every page in a browser', { timeout: 180_000 }, () => {
  it.each(PAGES)('%s renders without a problem and is saved as a screenshot', async (name, path) => {
    const { page, problems } = await watchedPage(admin);
    const res = await page.goto(`${d.base}${path()}`);
    expect(res?.status()).toBe(200);
    await page.locator('h1').first().waitFor();
    const file = join(DIR, `dashboard-${name}.png`);
    await page.screenshot({ path: file, type: 'png', fullPage: false });
    expect(statSync(file).size).toBeGreaterThan(5_000);
    expect(problems).toEqual([]);
    await page.close();
  });
});
